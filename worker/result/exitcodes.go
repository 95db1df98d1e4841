package result

import (
	"fmt"
	"strings"
)

// The process exit codes of every table command. They are the one taxonomy the CLI, the docs
// (docs/exit-codes.md, checked against ExitCodesMarkdown by a test), every command's --help
// (ExitCodesHelp) and the operator's Job podFailurePolicy (controllers/jobs.go) share.
const (
	ExitSucceeded   = 0 // the command did what was asked
	ExitFailed      = 1 // it may succeed on retry: storage unreachable, a lost conflict, interrupted
	ExitRefused     = 2 // it will not succeed until someone changes the table or the arguments
	ExitNothingToDo = 3 // nothing needed doing (0 under `deltakeeper worker`, which Jobs run)
)

// Ingest's reasons (worker/ingest returns them).
const (
	ReasonBadFile      = "BadFile"            // a bad input file stopped the batch
	ReasonSchemaChange = "SchemaChangeNeeded" // new source columns under failOnNewColumns
)

// ReasonDoc documents one result reason.
type ReasonDoc struct {
	Reason  string
	Outcome Outcome
	Meaning string
}

// Reasons lists every reason a result can carry, with the outcome (and so the exit code) it
// always comes with.
var Reasons = []ReasonDoc{
	{ReasonCorruptTable, Refused, "the log, a checkpoint, a data file or a deletion vector violates the protocol or does not decode (truncated or garbage JSON, broken Parquet magic or footer, a gap in the log, a file the log references is missing); the message names the file and, where there is one, the field. Corruption does not heal on retry, and no command deletes or rewrites such a table"},
	{ReasonUnsupportedFeature, Refused, "the table uses a reader or writer feature (or protocol version) deltakeeper does not implement, or files outside the table root (a shallow clone) that it will not rewrite or delete"},
	{ReasonBadArgument, Refused, "an invalid flag, predicate or version"},
	{ReasonTableNotFound, Refused, "no _delta_log at the location"},
	{ReasonBadFile, Refused, "ingest: an input file is corrupt or holds a value the table cannot take; nothing was committed"},
	{ReasonSchemaChange, Refused, "ingest: the source has new columns and schemaEvolution is failOnNewColumns"},
	{ReasonUnreachable, Failed, "storage could not be read or written (network, credentials, permissions, throttling)"},
	{ReasonConflict, Failed, "a concurrent commit conflicted and the retries were exhausted"},
	{ReasonInternal, Failed, "interrupted, or an unexpected error"},
}

// exitMeanings is the table of codes, in order.
var exitMeanings = []struct {
	code    int
	outcome Outcome
	meaning string
}{
	{ExitSucceeded, Succeeded, "succeeded"},
	{ExitFailed, Failed, "failed: may pass on retry"},
	{ExitRefused, Refused, "refused: will not pass until someone fixes the table or the arguments; retrying cannot help"},
	{ExitNothingToDo, NothingToDo, "nothing to do (exit 0 under `deltakeeper worker`, as Kubernetes counts no other code as success; the result still says nothing_to_do)"},
}

func reasonsOf(o Outcome) []string {
	var out []string
	for _, r := range Reasons {
		if r.Outcome == o {
			out = append(out, r.Reason)
		}
	}
	return out
}

// ExitCodesHelp is the taxonomy as plain text for --help.
func ExitCodesHelp() string {
	var b strings.Builder
	b.WriteString("Exit codes (the -o json result carries the outcome and a reason):\n")
	for _, m := range exitMeanings {
		fmt.Fprintf(&b, "  %d  %s\n", m.code, m.meaning)
		if rs := reasonsOf(m.outcome); len(rs) > 0 {
			fmt.Fprintf(&b, "     reasons: %s\n", strings.Join(rs, ", "))
		}
	}
	b.WriteString("  Corruption (CorruptTable) always exits 2: it does not heal on retry.\n")
	return b.String()
}

// ExitCodesMarkdown is the taxonomy as the Markdown of docs/exit-codes.md.
func ExitCodesMarkdown() string {
	var b strings.Builder
	b.WriteString("| exit | outcome | meaning |\n|---|---|---|\n")
	for _, m := range exitMeanings {
		fmt.Fprintf(&b, "| %d | `%s` | %s |\n", m.code, m.outcome, m.meaning)
	}
	b.WriteString("\n| reason | outcome | exit | meaning |\n|---|---|---|---|\n")
	for _, r := range Reasons {
		fmt.Fprintf(&b, "| `%s` | `%s` | %d | %s |\n", r.Reason, r.Outcome, r.Outcome.ExitCode(), r.Meaning)
	}
	return b.String()
}
