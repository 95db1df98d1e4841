package s3fault_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/internal/testutil/s3fault"
	"github.com/deltakeeper/deltakeeper/internal/testutil/s3server"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// store opens prefix on srv through p with one attempt per request, so that every injected fault
// reaches the caller.
func store(t *testing.T, srv *s3server.Server, p *s3fault.Proxy, prefix string) storage.Store {
	t.Helper()
	cfg := srv.S3Config()
	cfg.Endpoint = p.URL
	cfg.MaxAttempts = 1
	st, err := storage.Open(context.Background(), srv.Location(prefix), storage.Config{S3: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// onDisk reads an object behind the proxy's back, from the server's data directory.
func onDisk(srv *s3server.Server, key string) (string, bool) {
	data, err := os.ReadFile(srv.ObjectPath(key))
	return string(data), err == nil
}

func TestProxy_EachFaultDoesWhatItSays(t *testing.T) {
	srv := s3server.Start(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		fault     s3fault.Fault
		errText   string // a regular expression matched against the client's error
		stored    bool   // the server performed the write
		minMillis int64
	}{
		{"slow down", s3fault.SlowDown, "SlowDown", false, 0},
		{"internal error", s3fault.InternalError, "InternalError", false, 0},
		{"429 without a code", s3fault.TooManyRequests, "429", false, 0},
		// A reset may reach the client while it still sends the body: it then sees its own write fail.
		{"reset", s3fault.ConnectionReset, "connection reset|broken pipe|use of closed network connection", false, 0},
		{"lost acknowledgement", s3fault.LostAcknowledgment, "connection reset|broken pipe|use of closed network connection", true, 0},
		{"500 after forwarding", s3fault.InternalErrorAfter, "InternalError", true, 0},
		{"delay", s3fault.Slow(300 * time.Millisecond), "", true, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := strings.ReplaceAll(tc.name, " ", "-")
			p := s3fault.Start(t, srv.Endpoint, 1, s3fault.Rule{Match: s3fault.CommitPuts(), Fault: tc.fault})
			st := store(t, srv, p, prefix)
			key := "_delta_log/00000000000000000000.json"
			start := time.Now()
			err := st.PutIfAbsent(ctx, key, []byte("commit"))
			took := time.Since(start).Milliseconds()
			switch {
			case tc.errText == "" && err != nil:
				t.Fatalf("PutIfAbsent: %v, want success", err)
			case tc.errText != "" && (err == nil || !regexp.MustCompile(tc.errText).MatchString(err.Error())):
				t.Fatalf("PutIfAbsent: %v, want an error mentioning %q", err, tc.errText)
			}
			if took < tc.minMillis {
				t.Errorf("took %d ms, want at least %d", took, tc.minMillis)
			}
			if got, ok := onDisk(srv, prefix+"/"+key); ok != tc.stored || (ok && got != "commit") {
				t.Errorf("object on the server: %q (exists %t), want exists %t", got, ok, tc.stored)
			}
			inj := p.Injections()
			if len(inj) != 1 || inj[0].Op != s3fault.OpPut || inj[0].Key != prefix+"/"+key || inj[0].Fault != tc.fault {
				t.Errorf("injections %v, want one %v on the commit PUT", inj, tc.fault)
			}
			// Requests the rule does not match pass untouched.
			if _, err := st.Get(ctx, key); tc.stored && err != nil {
				t.Errorf("GET after the fault: %v", err)
			}
		})
	}
}

func TestProxy_SkipTimesAndOnInjectPickTheRequests(t *testing.T) {
	srv := s3server.Start(t)
	ctx := context.Background()
	var hooked []int64
	p := s3fault.Start(t, srv.Endpoint, 1, s3fault.Rule{
		Name: "second and third put", Match: s3fault.Ops(s3fault.OpPut), Fault: s3fault.SlowDown, Skip: 1, Times: 2,
		OnInject: func(r s3fault.Request) { hooked = append(hooked, r.N) },
	})
	st := store(t, srv, p, "skip")
	var failed []int
	for i := range 5 {
		if err := st.Put(ctx, fmt.Sprintf("k%d", i), []byte("x")); err != nil {
			failed = append(failed, i)
		}
	}
	if !slices.Equal(failed, []int{1, 2}) {
		t.Fatalf("failed puts %v, want [1 2]", failed)
	}
	if !slices.Equal(hooked, []int64{2, 3}) {
		t.Fatalf("OnInject saw requests %v, want [2 3]", hooked)
	}
	if p.Requests() != 5 {
		t.Fatalf("%d requests, want 5", p.Requests())
	}
}

func TestProxy_SameSeedSameFaults(t *testing.T) {
	srv := s3server.Start(t)
	ctx := context.Background()
	run := func(seed uint64) []int {
		p := s3fault.Start(t, srv.Endpoint, seed, s3fault.Rule{Fault: s3fault.InternalError, Probability: 0.3})
		st := store(t, srv, p, "seeded")
		var failed []int
		for i := range 40 {
			if err := st.Put(ctx, fmt.Sprintf("k%d", i), []byte("x")); err != nil {
				failed = append(failed, i)
			}
		}
		return failed
	}
	a, b, c := run(7), run(7), run(8)
	if !slices.Equal(a, b) {
		t.Fatalf("seed 7 failed %v, then %v", a, b)
	}
	if len(a) == 0 || len(a) == 40 || slices.Equal(a, c) {
		t.Fatalf("seed 7 failed %v, seed 8 %v: want a partial, seed-dependent schedule", a, c)
	}
}

func TestProxy_DropHoldsUntilTheClientGivesUp(t *testing.T) {
	srv := s3server.Start(t)
	p := s3fault.Start(t, srv.Endpoint, 1, s3fault.Rule{Match: s3fault.Ops(s3fault.OpGet), Fault: s3fault.Fault{Kind: s3fault.Drop}})
	st := store(t, srv, p, "drop")
	if err := st.Put(context.Background(), "k", []byte("x")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := st.Get(ctx, "k")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("GET of a dropped request: %v, want the caller's deadline", err)
	}
}

func TestProxy_ClassifiesRequestsAsS3RoutesThem(t *testing.T) {
	srv := s3server.Start(t)
	ctx := context.Background()
	var seen []string
	p := s3fault.Start(t, srv.Endpoint, 1, s3fault.Rule{Fault: s3fault.Fault{Kind: s3fault.Pass},
		OnInject: func(r s3fault.Request) { seen = append(seen, fmt.Sprintf("%s %s %t", r.Op, r.Key, r.Conditional())) }})
	st := store(t, srv, p, "ops")
	_ = st.PutIfAbsent(ctx, "_delta_log/00000000000000000001.json", []byte("c"))
	_, _ = st.Stat(ctx, "a b")
	_, _ = st.Get(ctx, "_delta_log/00000000000000000001.json")
	for _, err := range st.List(ctx, "_delta_log/", "") {
		_ = err // like the calls above: the proxy's log of them is what is tested
	}
	_ = st.Delete(ctx, "_delta_log/00000000000000000001.json")
	want := []string{
		"put ops/_delta_log/00000000000000000001.json true",
		"head ops/a b false",
		"get ops/_delta_log/00000000000000000001.json false",
		"list  false",
		"delete ops/_delta_log/00000000000000000001.json false",
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("classified\n%s\nwant\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
}
