package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// The manager's soft memory limit. Without one the Go collector lets the heap grow to twice the live data
// before collecting, so a manager holding 10,000 tables in its caches can pass its container limit during a
// relist and be OOM-killed although its live data fits. GOMEMLIMIT set by hand wins; otherwise the limit is
// 90% of the container's memory limit, read from DELTAKEEPER_MEMORY_LIMIT (bytes; the chart and the
// kustomize manifests fill it with the downward API's resourceFieldRef limits.memory) or else from the
// cgroup (v2 memory.max, v1 memory.limit_in_bytes).

// memoryLimitShare is the part of the container limit the heap may use; the rest is stacks, the runtime and
// headroom for the collector to catch up.
const memoryLimitShare = 0.9

// applyMemoryLimit sets the runtime's soft memory limit and returns it (0: left alone) and where it came from.
func applyMemoryLimit(getenv func(string) string, cgroupRoot string) (int64, string) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, "GOMEMLIMIT"
	}
	limit, source := containerMemoryLimit(getenv, cgroupRoot)
	if limit <= 0 {
		return 0, ""
	}
	soft := int64(float64(limit) * memoryLimitShare)
	debug.SetMemoryLimit(soft)
	return soft, source
}

// containerMemoryLimit is the container's memory limit in bytes, 0 when there is none or it cannot be read.
func containerMemoryLimit(getenv func(string) string, cgroupRoot string) (int64, string) {
	if v := strings.TrimSpace(getenv("DELTAKEEPER_MEMORY_LIMIT")); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			return n, "DELTAKEEPER_MEMORY_LIMIT"
		}
	}
	for _, f := range []string{"memory.max", "memory/memory.limit_in_bytes"} {
		data, err := os.ReadFile(filepath.Join(cgroupRoot, f))
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		// "max" (v2) or a huge page-rounded number (v1) means no limit.
		if err == nil && n > 0 && n < 1<<60 {
			return n, filepath.Join(cgroupRoot, f)
		}
	}
	return 0, ""
}
