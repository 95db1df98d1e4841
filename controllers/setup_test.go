package controllers

import (
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
)

func TestWatchNamespaces_EmptyWatchesAllListsAreTrimmedAndLeasesSeeTheLockNamespace(t *testing.T) {
	all := CacheOptions()
	WatchNamespaces(&all, nil, "deltakeeper-system")
	if all.DefaultNamespaces != nil {
		t.Errorf("no namespaces: %v, want nil (all namespaces)", all.DefaultNamespaces)
	}
	opts := CacheOptions()
	WatchNamespaces(&opts, []string{"analytics", " sales", ""}, "deltakeeper-system")
	if len(opts.DefaultNamespaces) != 2 {
		t.Fatalf("namespaces %v, want analytics and sales", opts.DefaultNamespaces)
	}
	for _, ns := range []string{"analytics", "sales"} {
		if _, ok := opts.DefaultNamespaces[ns]; !ok {
			t.Errorf("namespace %s missing from %v", ns, opts.DefaultNamespaces)
		}
	}
	found := false
	for obj, by := range opts.ByObject {
		if _, ok := obj.(*coordinationv1.Lease); !ok {
			continue
		}
		found = true
		for _, ns := range []string{"analytics", "sales", "deltakeeper-system"} {
			if _, ok := by.Namespaces[ns]; !ok {
				t.Errorf("Lease cache misses namespace %s: %v", ns, by.Namespaces)
			}
		}
		if by.Label == nil {
			t.Error("Lease cache lost its label selector")
		}
	}
	if !found {
		t.Fatal("CacheOptions has no Lease entry")
	}
}
