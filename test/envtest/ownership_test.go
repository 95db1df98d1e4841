package envtest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// One owner per physical table: DeltaTables in two namespaces, one manager watching both, the lock Leases
// in a third namespace (the manager's).

// twoNamespaces starts a manager over two fresh namespaces with the lock Leases in a third.
func twoNamespaces(t *testing.T) (ns1, ns2, lockNS string, clk *clocktesting.FakeClock) {
	t.Helper()
	ns1, ns2, lockNS = newNamespace(t), newNamespace(t), newNamespace(t)
	clk = clocktesting.NewFakeClock(time.Now())
	startManagerFor(t, []string{ns1, ns2}, lockNS, clk)
	return ns1, ns2, lockNS, clk
}

// newTableAt creates an S3 DeltaTable at a location (on the same endpoint as newTable's).
func newTableAt(t *testing.T, ns, name, location string) *deltav1.DeltaTable {
	t.Helper()
	table := &deltav1.DeltaTable{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: deltav1.DeltaTableSpec{
			Location: location,
			Storage: &deltav1.StorageSpec{S3: &deltav1.S3Storage{Endpoint: "https://minio.storage.svc:9000", ForcePathStyle: true,
				Credentials: &deltav1.S3Credentials{SecretRef: &deltav1.S3SecretRef{Name: "lake-keys"}}}},
		},
	}
	if err := k8sClient.Create(context.Background(), table); err != nil {
		t.Fatal(err)
	}
	return table
}

// waitDuplicate waits until table is a duplicate of owner (Ready=False DuplicateLocation naming it).
func waitDuplicate(t *testing.T, table, owner *deltav1.DeltaTable) {
	t.Helper()
	waitTable(t, table, "a duplicate of "+owner.Namespace+"/"+owner.Name, func(tb *deltav1.DeltaTable) (bool, string) {
		ready := condition(tb.Status.Conditions, deltav1.ConditionReady)
		return strings.HasPrefix(ready, "False/DuplicateLocation") && strings.Contains(ready, owner.Namespace+"/"+owner.Name+","), ready
	})
}

func TestDeltaTable_DuplicateLocationRunsNothingUntilItsOwnerGoes(t *testing.T) {
	ns1, ns2, lockNS, clk := twoNamespaces(t)
	ctx := context.Background()
	orders := newTableAt(t, ns1, "orders", "s3://lake/sales/orders")
	first := waitLiveJob(t, ns1, "orders", "inspect")

	// The same table written another way (a trailing slash), in another namespace, a second later
	// (creationTimestamp has whole seconds; within one second the namespace names would decide).
	nextSecond(orders)
	copyOf := newTableAt(t, ns2, "orders-copy", "s3://lake/sales/orders/")
	waitDuplicate(t, copyOf, orders)
	waitEvent(t, ns2, "orders-copy", "DuplicateLocation", ns1+"/orders")
	if h := leaseHolderIn(t, lockNS, ns2, "orders-copy"); h != first.Name {
		t.Errorf("both tables must share one lock Lease, held by %s; the duplicate sees holder %q", first.Name, h)
	}

	// It runs nothing: no inspection (so no declared-property commits) and no maintenance from a policy.
	p := newPolicy(t, ns2, "nightly", deltav1.OptimizePolicySpec{Targets: deltav1.PolicyTargets{TableNames: []string{"orders-copy"}}})
	annotate(t, p, deltav1.AnnotationRunNow, "now")
	waitPolicy(t, p, "skips the duplicate", func(p *deltav1.OptimizePolicy) (bool, string) {
		for _, r := range p.Status.RecentRuns {
			if r.Result == deltav1.RunSkipped && r.Reason == deltav1.ReasonDuplicateLocation && strings.Contains(r.Message, ns1+"/orders") {
				return p.Status.LastRunNow == "now", ""
			}
		}
		return false, fmt.Sprintf("%+v", p.Status.RecentRuns)
	})
	finishJob(t, clk, first, 0, encode(t, inspectResult(4, 10, 1)))
	waitTable(t, orders, "inspected", func(tb *deltav1.DeltaTable) (bool, string) {
		return tb.Status.LastInspectedTime != nil, condition(tb.Status.Conditions, deltav1.ConditionReady)
	})
	poke(t, copyOf)
	consistently(t, "the duplicate starts no Job", time.Second, func() (bool, string) {
		jobs := tableJobs(t, ns2, "orders-copy", "")
		return len(jobs) == 0, fmt.Sprintf("%d Jobs", len(jobs))
	})

	// The owner goes: the duplicate takes over at once.
	if err := k8sClient.Delete(ctx, orders); err != nil {
		t.Fatal(err)
	}
	waitLiveJob(t, ns2, "orders-copy", "inspect")
	waitTable(t, copyOf, "no longer a duplicate", func(tb *deltav1.DeltaTable) (bool, string) {
		ready := condition(tb.Status.Conditions, deltav1.ConditionReady)
		return !strings.Contains(ready, "DuplicateLocation"), ready
	})

	// A table re-created at that location (locations are immutable, so this is how a table "moves") is the
	// newcomer now, and waits for the one that took over.
	nextSecond(copyOf)
	again := newTableAt(t, ns1, "orders", "s3://lake/sales/orders")
	waitDuplicate(t, again, copyOf)
	consistently(t, "the newcomer starts no Job", 500*time.Millisecond, func() (bool, string) {
		live := liveJobs(tableJobs(t, ns1, "orders", ""))
		return len(live) == 0, fmt.Sprint(live)
	})
}

func TestDeltaTable_RacingCreationsAtOneLocationLeaveOneOwnerAndOneJob(t *testing.T) {
	ns1, ns2, lockNS, clk := twoNamespaces(t)
	ctx := context.Background()
	const rounds = 8
	type pair struct{ a, b *deltav1.DeltaTable }
	pairs := make([]pair, rounds)
	for i := range pairs {
		loc := fmt.Sprintf("s3://lake/race/t%d", i)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); pairs[i].a = newTableAtNoFatal(t, ns1, fmt.Sprintf("t%d", i), loc) }()
		go func() { defer wg.Done(); pairs[i].b = newTableAtNoFatal(t, ns2, fmt.Sprintf("t%d", i), loc+"/") }()
		wg.Wait()
		if pairs[i].a == nil || pairs[i].b == nil {
			t.FailNow()
		}
	}
	liveOf := func(p pair) []batchv1.Job {
		var live []batchv1.Job
		for _, tb := range []*deltav1.DeltaTable{p.a, p.b} {
			for _, j := range tableJobs(t, tb.Namespace, tb.Name, "") {
				if len(liveJobs([]batchv1.Job{j})) == 1 {
					live = append(live, j)
				}
			}
		}
		return live
	}
	for i, p := range pairs {
		// The rule every reconciler applies: the older creationTimestamp owns it, then namespace/name.
		owner, dup := p.a, p.b
		if ts := p.b.CreationTimestamp; ts.Before(&p.a.CreationTimestamp) || (ts.Equal(&p.a.CreationTimestamp) && p.b.Namespace < p.a.Namespace) {
			owner, dup = p.b, p.a
		}
		waitDuplicate(t, dup, owner)
		var seen []batchv1.Job
		eventually(t, fmt.Sprintf("round %d: one inspect Job on the location", i), func() (bool, string) {
			seen = liveOf(p)
			if len(seen) > 1 {
				t.Fatalf("round %d: two live Jobs on one table: %s and %s", i, seen[0].Name, seen[1].Name)
			}
			return len(seen) == 1, "no live Job yet"
		})
		// Before the caches showed both tables, the newcomer may have started the first inspection; the
		// owner then waits for the lock and inspects once it is done.
		if seen[0].Namespace == dup.Namespace {
			finishJob(t, clk, &seen[0], 0, encode(t, inspectResult(1, 1, 0)))
			eventually(t, "the duplicate's Job releases the lock", func() (bool, string) {
				h := leaseHolderIn(t, lockNS, owner.Namespace, owner.Name)
				return h == "", "holder " + h
			})
			poke(t, owner) // the owner waits for the lock on a 30s timer; do not wait for it
			waitLiveJob(t, owner.Namespace, owner.Name, "inspect")
		}
		dupJobs := len(tableJobs(t, dup.Namespace, dup.Name, ""))
		consistently(t, fmt.Sprintf("round %d: at most one live Job, none new for the duplicate", i), 300*time.Millisecond, func() (bool, string) {
			live := liveOf(p)
			n := len(tableJobs(t, dup.Namespace, dup.Name, ""))
			return len(live) <= 1 && n == dupJobs, fmt.Sprintf("%d live, duplicate has %d Jobs (had %d)", len(live), n, dupJobs)
		})
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(owner), owner); err != nil {
			t.Fatal(err)
		}
		if ready := condition(owner.Status.Conditions, deltav1.ConditionReady); strings.Contains(ready, "DuplicateLocation") {
			t.Errorf("round %d: the owner %s/%s is marked a duplicate too: %s", i, owner.Namespace, owner.Name, ready)
		}
	}
}

// newTableAtNoFatal is newTableAt for goroutines (t.Fatal must run on the test's goroutine).
func newTableAtNoFatal(t *testing.T, ns, name, location string) *deltav1.DeltaTable {
	table := &deltav1.DeltaTable{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: deltav1.DeltaTableSpec{
			Location: location,
			Storage: &deltav1.StorageSpec{S3: &deltav1.S3Storage{Endpoint: "https://minio.storage.svc:9000", ForcePathStyle: true,
				Credentials: &deltav1.S3Credentials{SecretRef: &deltav1.S3SecretRef{Name: "lake-keys"}}}},
		},
	}
	if err := k8sClient.Create(context.Background(), table); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Errorf("create %s/%s: %v", ns, name, err)
		return nil
	}
	return table
}

// nextSecond waits until the wall clock is past the second obj was created in.
func nextSecond(obj client.Object) {
	time.Sleep(time.Until(obj.GetCreationTimestamp().Add(time.Second + 50*time.Millisecond)))
}
