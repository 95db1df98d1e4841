package torture

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	mrand "math/rand/v2"
	"os"
	"strconv"
	"testing"
)

// Environment of the suite.
const (
	// envSize selects the counts: "ci" (default) or "full".
	envSize = "DELTAKEEPER_TORTURE"
	// envSeed replays a run: every random choice derives from it.
	envSeed = "DELTAKEEPER_TORTURE_SEED"
)

// suiteSize is how hard the suite hits. Kills and commits are per backend (local, S3, Azure), so that
// adding a backend adds its own share rather than thinning the others'; fault runs are S3's alone.
type suiteSize struct {
	name string
	// kills is the number of SIGKILLs per backend that hit a live process (kills landing after the
	// process exited do not count).
	kills int
	// keyedKills is the same for the keyed writers (merge, upsert ingest, delete --where).
	keyedKills int
	// commits is the number of commits of the concurrency test per backend.
	commits int
	// faultRuns is the number of command runs through the fault proxy.
	faultRuns int
}

var sizes = map[string]suiteSize{
	// About four minutes on two busy cores for local and S3, plus about one and a half for Azure: what
	// `make test` can afford.
	"ci": {name: "ci", kills: 30, keyedKills: 15, commits: 75, faultRuns: 60},
	// `make torture`: the counts issue 10 asks for, with some margin.
	"full": {name: "full", kills: 120, keyedKills: 100, commits: 300, faultRuns: 260},
}

// size and seed are set once by TestMain.
var (
	size       suiteSize
	masterSeed uint64
)

func loadConfig() error {
	name := os.Getenv(envSize)
	if name == "" {
		name = "ci"
	}
	s, ok := sizes[name]
	if !ok {
		return fmt.Errorf("%s=%q: use ci or full", envSize, name)
	}
	size = s
	if v := os.Getenv(envSeed); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%s=%q is not an unsigned integer", envSeed, v)
		}
		masterSeed = n
		return nil
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	masterSeed = binary.LittleEndian.Uint64(b[:]) >> 1 // fits in an int64 too, for people's shells
	return nil
}

// seedOf derives the seed of one test or subtest from the master seed and its name, so that a
// subtest replays the same way whether it runs alone (-run) or with the others.
func seedOf(t testing.TB) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", masterSeed, t.Name())
	return h.Sum64()
}

// rngOf is the random source of a test, from seedOf.
func rngOf(t testing.TB) *mrand.Rand {
	s := seedOf(t)
	return mrand.New(mrand.NewPCG(s, s>>17|1))
}

// replayHint says how to run one test again with the same choices.
func replayHint(t testing.TB) string {
	return fmt.Sprintf("replay: %s=%d %s=%s go test ./test/torture -run '^%s$'", envSeed, masterSeed, envSize, size.name,
		anchoredName(t.Name()))
}

// anchoredName turns a subtest name into a -run pattern that matches it alone.
func anchoredName(name string) string {
	out := make([]byte, 0, len(name)+8)
	for i := 0; i < len(name); i++ {
		if name[i] == '/' {
			out = append(out, "$/^"...)
			continue
		}
		out = append(out, name[i])
	}
	return string(out)
}

// share splits n over parts, the first ones taking the remainder, each at least min.
func share(n, parts, i, atLeast int) int {
	q := n / parts
	if i < n%parts {
		q++
	}
	return max(q, atLeast)
}
