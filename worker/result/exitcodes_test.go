package result

import (
	"os"
	"strings"
	"testing"
)

const exitCodesDoc = "../../docs/exit-codes.md"

// The generated part of docs/exit-codes.md lies between these markers.
const (
	docBegin = "<!-- BEGIN exit codes: generated from worker/result/exitcodes.go -->\n"
	docEnd   = "<!-- END exit codes -->\n"
)

// TestExitCodes_DocIsTheTaxonomy: docs/exit-codes.md holds exactly ExitCodesMarkdown, so the doc,
// --help and the Job's podFailurePolicy cannot drift. DELTAKEEPER_UPDATE_DOCS=1 rewrites it.
func TestExitCodes_DocIsTheTaxonomy(t *testing.T) {
	data, err := os.ReadFile(exitCodesDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i, j := strings.Index(doc, docBegin), strings.Index(doc, docEnd)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the generated section markers", exitCodesDoc)
	}
	want := doc[:i+len(docBegin)] + ExitCodesMarkdown() + doc[j:]
	if want == doc {
		return
	}
	if os.Getenv("DELTAKEEPER_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(exitCodesDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("%s is stale: run DELTAKEEPER_UPDATE_DOCS=1 go test ./worker/result -run TestExitCodes_DocIsTheTaxonomy", exitCodesDoc)
}

func TestExitCodes_EveryOutcomeHasItsCodeAndEveryReasonOneOutcome(t *testing.T) {
	for o, code := range map[Outcome]int{Succeeded: ExitSucceeded, Failed: ExitFailed, Refused: ExitRefused, NothingToDo: ExitNothingToDo} {
		if o.ExitCode() != code {
			t.Errorf("%s exits %d, want %d", o, o.ExitCode(), code)
		}
	}
	seen := map[string]bool{}
	for _, r := range Reasons {
		if seen[r.Reason] || r.Outcome != Failed && r.Outcome != Refused {
			t.Errorf("reason %s: listed twice or with outcome %s", r.Reason, r.Outcome)
		}
		seen[r.Reason] = true
	}
	for _, r := range []string{ReasonCorruptTable, ReasonUnsupportedFeature, ReasonBadArgument, ReasonTableNotFound,
		ReasonUnreachable, ReasonConflict, ReasonInternal, ReasonBadFile, ReasonSchemaChange} {
		if !seen[r] {
			t.Errorf("reason %s is not documented in Reasons", r)
		}
	}
	help := ExitCodesHelp()
	for _, want := range []string{"  2  refused", "CorruptTable", "  1  failed: may pass on retry"} {
		if !strings.Contains(help, want) {
			t.Errorf("--help text lacks %q:\n%s", want, help)
		}
	}
}
