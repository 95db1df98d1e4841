// Package initgc pauses the garbage collector while the binary's packages initialize. Every run of
// the one binary initializes the manager's libraries too (Kubernetes clients, API schemes, gRPC, the
// cloud SDKs): about 7 MB of allocations that the collector would otherwise chase through three or
// four cycles, some 10 ms of a worker Job's start. This package has no dependency but runtime/debug,
// so it initializes before those libraries; package main's init, which runs after every library's,
// calls Restore.
package initgc

import "runtime/debug"

// percent is the collector's setting before init paused it (GOGC, default 100; -1 when off).
var percent = debug.SetGCPercent(-1)

// Restore gives the collector back its setting.
func Restore() { debug.SetGCPercent(percent) }
