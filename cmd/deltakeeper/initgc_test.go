package main

import (
	"os"
	"runtime/debug"
	"testing"
)

// TestInit_CollectorRunsAgainOnceEveryPackageIsInitialized: initgc pauses the collector during the
// libraries' init; package main's init must give it back, or the binary (and this test binary)
// would never collect.
func TestInit_CollectorRunsAgainOnceEveryPackageIsInitialized(t *testing.T) {
	p := debug.SetGCPercent(100)
	defer debug.SetGCPercent(p)
	if p < 0 && os.Getenv("GOGC") != "off" {
		t.Fatalf("the collector is still off after init (GC percent %d)", p)
	}
}
