package controllers

import (
	"regexp"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

func TestTableIdentity_SameTableSameKeyOtherStoreOtherKey(t *testing.T) {
	id := func(b *tableBuilder) string {
		t.Helper()
		s, err := tableIdentity(b.obj())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	at := func(loc string) *tableBuilder { b := s3Table("t"); b.t.Spec.Location = loc; return b }
	base := id(at("s3://lakehouse/sales/orders"))
	for _, same := range []*tableBuilder{at("s3://lakehouse/sales/orders/"), at("s3a://lakehouse/sales/orders"), at("S3://lakehouse/sales/orders//")} {
		if got := id(same); got != base {
			t.Errorf("%s: identity %q, want %q", same.t.Spec.Location, got, base)
		}
	}
	if got := id(at("s3://lakehouse/sales/orders").withEndpoint("https://minio.a.svc:9000")); got == base {
		t.Error("a table on another S3 endpoint has the identity of the AWS one")
	}
	if a, b := id(at("s3://x/t").withEndpoint("https://MinIO.a.svc:9000/")), id(at("s3://x/t").withEndpoint("https://minio.a.svc:9000")); a != b {
		t.Errorf("endpoint spellings: %q vs %q", a, b)
	}
	pvcA, pvcB := localTable("t"), localTable("t")
	pvcB.t.Spec.Storage.Local.ClaimName = "other-claim"
	if id(pvcA) == id(pvcB) {
		t.Error("the same path on two volume claims is two tables")
	}
	name := LocationLeaseName(base)
	if !regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`).MatchString(name) || len(name) > 63 {
		t.Errorf("Lease name %q is not a DNS label", name)
	}
}

func TestOwnsBefore_OlderThenNamespaceAndName(t *testing.T) {
	table := func(ns, name string, created time.Time) *deltav1.DeltaTable {
		return &deltav1.DeltaTable{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(created)}}
	}
	t0 := time.Date(2026, 5, 21, 3, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		a, b *deltav1.DeltaTable
		want bool
	}{
		{"older wins", table("z", "z", t0), table("a", "a", t0.Add(time.Second)), true},
		{"newer loses", table("a", "a", t0.Add(time.Second)), table("z", "z", t0), false},
		{"same second: namespace", table("a", "z", t0), table("b", "a", t0), true},
		{"same second and namespace: name", table("a", "b", t0), table("a", "a", t0), false},
	}
	for _, c := range cases {
		if got := ownsBefore(c.a, c.b); got != c.want {
			t.Errorf("%s: ownsBefore = %v", c.name, got)
		}
	}
}
