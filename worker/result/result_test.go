package result

import (
	"errors"
	"strings"
	"testing"
)

func TestEncode_StaysUnderTheTerminationMessageLimit(t *testing.T) {
	r := &Result{Command: "inspect", Outcome: Succeeded, Message: strings.Repeat("m", 5000),
		Table: &Table{Version: 3, WriterFeatures: []string{strings.Repeat("f", 3000)}, Quality: make([]ColumnQuality, 4)}}
	data, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > MaxBytes {
		t.Fatalf("encoded %d bytes, limit %d", len(data), MaxBytes)
	}
	back, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if back.Table.Version != 3 || back.Outcome != Succeeded {
		t.Fatalf("round trip lost facts: %+v", back)
	}
}

func TestDecode_RejectsUnknownSchemaAndOutcome(t *testing.T) {
	for _, doc := range []string{`{"v":2,"cmd":"x","outcome":"succeeded"}`, `{"v":1,"cmd":"x","outcome":"great"}`, `not json`} {
		if _, err := Decode([]byte(doc)); err == nil {
			t.Errorf("Decode(%s) accepted it", doc)
		}
	}
}

func TestClassify_UsesTheWrappedOutcome(t *testing.T) {
	err := Refuse(ReasonUnsupportedFeature, errors.New(`table uses writer feature "catalogManaged"`))
	wrapped := errors.Join(errors.New("optimize"), err)
	outcome, reason := Classify(wrapped)
	if outcome != Refused || reason != ReasonUnsupportedFeature {
		t.Fatalf("got %s/%s", outcome, reason)
	}
	if o, r := Classify(errors.New("boom")); o != Failed || r != ReasonInternal {
		t.Fatalf("plain error classified as %s/%s", o, r)
	}
	if Refused.ExitCode() != 2 || NothingToDo.ExitCode() != 3 || Succeeded.ExitCode() != 0 || Failed.ExitCode() != 1 {
		t.Fatal("exit codes changed; Jobs' podFailurePolicy depends on them")
	}
}
