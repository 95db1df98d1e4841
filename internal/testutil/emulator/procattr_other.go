//go:build !linux

package emulator

import "os/exec"

// setProcAttr has no portable equivalent of Pdeathsig; t.Cleanup still stops the server.
func setProcAttr(cmd *exec.Cmd) {}
