package controllers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

func TestPolicyReady_StaysShortForThousandsOfTables(t *testing.T) {
	var tables, missing []string
	for i := range 2000 {
		tables = append(tables, fmt.Sprintf("orders-%04d", i))
		missing = append(missing, fmt.Sprintf("gone-%04d", i))
	}
	ps := newPolicyStatus(&deltav1.OptimizePolicy{}, time.Unix(0, 0))
	for _, name := range tables {
		ps.waiting = append(ps.waiting, "table "+name+" is busy with Job "+name+"-inspect-abc")
	}
	ps.setReady(policyView{Tables: tables, Missing: missing, Scheduled: true, TimeZone: "UTC"})
	ready := apimeta.FindStatusCondition(ps.st.Conditions, deltav1.ConditionReady)
	if len(ready.Message) > 400 {
		t.Errorf("Ready message is %d characters:\n%s", len(ready.Message), ready.Message)
	}
	for _, want := range []string{"2000 DeltaTables not found: gone-0000, gone-0001, gone-0002 and 1997 more",
		"maintaining the other 2000", "2000 runs waiting: table orders-0000 is busy"} {
		if !strings.Contains(ready.Message, want) {
			t.Errorf("Ready message does not say %q:\n%s", want, ready.Message)
		}
	}
}
