package controllers

import (
	"testing"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

func TestLosesToKeyedWrites_LooksAtTheLastThreeMaintenanceRuns(t *testing.T) {
	run := func(name string, conflict, removed int64, ops ...deltav1.Operation) deltav1.RunRecord {
		if ops == nil {
			ops = []deltav1.Operation{deltav1.OperationOptimize}
		}
		return deltav1.RunRecord{JobName: name, Operations: ops, Result: deltav1.RunSucceeded, ConflictFiles: conflict, FilesRemoved: removed}
	}
	inspect := run("inspect", 0, 0, deltav1.OperationInspect)
	cases := []struct {
		name string
		runs []deltav1.RunRecord // newest first, as in status
		want bool
	}{
		{"no runs", nil, false},
		{"a run that lost everything", []deltav1.RunRecord{run("a", 40, 0)}, true},
		{"a run that lost less than it rewrote", []deltav1.RunRecord{run("a", 3, 37)}, false},
		{"lost two runs ago, inspections between", []deltav1.RunRecord{inspect, run("b", 0, 50), inspect, run("a", 40, 0)}, true},
		{"lost four runs ago", []deltav1.RunRecord{run("d", 0, 9), run("c", 0, 9), run("b", 0, 9), run("a", 40, 0)}, false},
		{"a running run is not counted", []deltav1.RunRecord{{JobName: "r", Operations: []deltav1.Operation{deltav1.OperationOptimize}, Result: deltav1.RunRunning},
			run("c", 0, 9), run("b", 0, 9), run("a", 40, 0)}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			why, got := losesToKeyedWrites(&deltav1.DeltaTable{Status: deltav1.DeltaTableStatus{RecentRuns: c.runs}})
			if got != c.want {
				t.Errorf("losesToKeyedWrites = %v (%q), want %v", got, why, c.want)
			}
		})
	}
}
