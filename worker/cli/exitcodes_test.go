package cli

import (
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/result"
)

// TestCommands_HelpEndsWithTheExitCodes: the taxonomy is reachable from every command's --help,
// generated from worker/result so that it cannot drift from the codes the commands exit with.
func TestCommands_HelpEndsWithTheExitCodes(t *testing.T) {
	for _, mode := range []Mode{Interactive, Job} {
		for _, newCmd := range Constructors() {
			cmd := newCmd(mode)
			if !strings.HasSuffix(cmd.Long, ExitCodesHelp(mode)) || !strings.Contains(cmd.Long, result.ReasonCorruptTable) {
				t.Errorf("%s (mode %d): help does not end with the exit codes:\n%s", cmd.Name(), mode, cmd.Long)
			}
		}
	}
}

// TestCommands_BadUsageIsRefused: an unknown flag, a flag value that does not parse and a missing
// argument exit 2 (refused), as every other bad argument does; cobra's own error exited 1.
func TestCommands_BadUsageIsRefused(t *testing.T) {
	for _, newCmd := range Constructors() {
		name := newCmd(Interactive).Name()
		for _, args := range [][]string{{"./t", "--no-such-flag"}, {}, {"./t", "-o"}} {
			_, errOut, code := execute(t, newCmd, args...)
			if code != result.ExitRefused || !strings.Contains(errOut, "refused") {
				t.Errorf("%s %v: exit %d, stderr %q; want %d (refused)", name, args, code, errOut, result.ExitRefused)
			}
		}
	}
}
