package delta

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

func listingOf(t *testing.T, names ...string) *listing {
	t.Helper()
	l := &listing{commits: map[Version]logFile{}, checkpoints: map[Version][]logFile{}, maxVersion: NoVersion, minVersion: NoVersion}
	for _, n := range names {
		f, ok := parseLogFile(storage.ObjectInfo{Key: LogDir + n})
		if !ok {
			t.Fatalf("%s not recognised", n)
		}
		switch f.kind {
		case kindCommit:
			l.commits[f.version] = f
		case kindCompaction:
			l.compactions = append(l.compactions, f)
			continue
		default:
			l.checkpoints[f.version] = append(l.checkpoints[f.version], f)
		}
		l.maxVersion = max(l.maxVersion, f.version)
	}
	return l
}

func v20(v int) string { return fmt.Sprintf("%020d", v) }

func commitNames(from, to int) []string {
	var out []string
	for v := from; v <= to; v++ {
		out = append(out, v20(v)+".json")
	}
	return out
}

func TestParseLogFile_RecognisesProtocolNamesOnly(t *testing.T) {
	ok := map[string]logFileKind{
		v20(3) + ".json":               kindCommit,
		v20(3) + ".crc":                kindChecksum,
		v20(3) + ".checkpoint.parquet": kindCheckpointClassic,
		v20(3) + ".checkpoint.0000000001.0000000002.parquet":             kindCheckpointMultiPart,
		v20(3) + ".checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json": kindCheckpointUUID,
		v20(3) + "." + v20(5) + ".compacted.json":                        kindCompaction,
	}
	for name, kind := range ok {
		f, recognised := parseLogFile(storage.ObjectInfo{Key: LogDir + name})
		if !recognised || f.kind != kind || f.version != 3 {
			t.Errorf("%s: recognised=%v kind=%v version=%d", name, recognised, f.kind, f.version)
		}
	}
	for _, name := range []string{
		"_last_checkpoint", "." + v20(3) + ".json.crc", v20(3) + ".json.tmp", "123.json",
		v20(3) + ".checkpoint.0000000003.0000000002.parquet", v20(5) + "." + v20(3) + ".compacted.json",
		"_sidecars/" + v20(3) + ".parquet", v20(3) + ".checkpoint.not-a-uuid.json",
	} {
		if _, recognised := parseLogFile(storage.ObjectInfo{Key: LogDir + name}); recognised {
			t.Errorf("%s: recognised, want ignored", name)
		}
	}
}

func TestBuildSegment_PicksNewestCompleteCheckpoint(t *testing.T) {
	names := append(commitNames(0, 12),
		v20(5)+".checkpoint.parquet",
		// An interrupted multi-part write at 10 (part 2 of 3 missing) must be ignored.
		v20(10)+".checkpoint.0000000001.0000000003.parquet",
		v20(10)+".checkpoint.0000000003.0000000003.parquet",
	)
	seg, err := buildSegment("t", listingOf(t, names...), NoVersion, NoVersion)
	if err != nil {
		t.Fatal(err)
	}
	if seg.cpVersion != 5 || len(seg.deltas) != 7 || seg.version != 12 || seg.latestCommit == nil {
		t.Fatalf("checkpoint %d, %d deltas, version %d", seg.cpVersion, len(seg.deltas), seg.version)
	}
	// Completing the multi-part set makes it the newest usable checkpoint.
	names = append(names, v20(10)+".checkpoint.0000000002.0000000003.parquet")
	seg, _ = buildSegment("t", listingOf(t, names...), NoVersion, NoVersion)
	if seg.cpVersion != 10 || len(seg.checkpoint) != 3 || seg.checkpoint[1].part != 2 {
		t.Fatalf("checkpoint %d with %d parts", seg.cpVersion, len(seg.checkpoint))
	}
	// Time travel below it uses the older one; "below" skips a corrupt one.
	if seg, _ = buildSegment("t", listingOf(t, names...), 7, NoVersion); seg.cpVersion != 5 || seg.version != 7 {
		t.Fatalf("at 7: checkpoint %d version %d", seg.cpVersion, seg.version)
	}
	if seg, _ = buildSegment("t", listingOf(t, names...), NoVersion, 10); seg.cpVersion != 5 {
		t.Fatalf("below 10: checkpoint %d", seg.cpVersion)
	}
}

func TestBuildSegment_DetectsGapsAndTruncatedLogs(t *testing.T) {
	gap := append(commitNames(0, 3), commitNames(5, 6)...)
	if _, err := buildSegment("t", listingOf(t, gap...), NoVersion, NoVersion); !errors.Is(err, ErrLogGap) {
		t.Fatalf("gap: err = %v, want ErrLogGap", err)
	}
	// A gap before the checkpoint does not matter.
	withCP := append(slices.Clip(gap), v20(5)+".checkpoint.parquet")
	if _, err := buildSegment("t", listingOf(t, withCP...), NoVersion, NoVersion); err != nil {
		t.Fatalf("gap before checkpoint: %v", err)
	}
	// Cleaned-up log: commits 0..4 gone, checkpoint at 5.
	truncated := append(commitNames(5, 8), v20(5)+".checkpoint.parquet")
	var nf *VersionNotFoundError
	if _, err := buildSegment("t", listingOf(t, truncated...), 3, NoVersion); !errors.As(err, &nf) || nf.Earliest != 5 || nf.Latest != 8 {
		t.Fatalf("before earliest: err = %v", err)
	}
	if _, err := buildSegment("t", listingOf(t, truncated...), 9, NoVersion); !errors.As(err, &nf) || nf.Requested != 9 {
		t.Fatalf("after latest: err = %v", err)
	}
	if _, err := buildSegment("t", listingOf(t), NoVersion, NoVersion); !errors.As(err, &nf) || nf.Latest != NoVersion {
		t.Fatalf("empty log: err = %v", err)
	}
}

func TestBuildSegment_UsesCompactionFilesOnlyWhereCommitsAreGone(t *testing.T) {
	compactions := []string{
		v20(2) + ".checkpoint.parquet",
		v20(1) + "." + v20(4) + ".compacted.json", // starts inside the checkpoint: does not fit
		v20(3) + "." + v20(5) + ".compacted.json", // fits
		v20(3) + "." + v20(6) + ".compacted.json", // fits, wider
		v20(7) + "." + v20(9) + ".compacted.json", // reaches the snapshot version: its commitInfo is needed
	}
	deltas := func(names []string, target Version) string {
		t.Helper()
		seg, err := buildSegment("t", listingOf(t, names...), target, NoVersion)
		if err != nil {
			return err.Error()
		}
		var got []string
		for _, d := range seg.deltas {
			if d.kind == kindCompaction {
				got = append(got, fmt.Sprintf("%d-%d", d.version, d.end))
			} else {
				got = append(got, d.version.String())
			}
		}
		return fmt.Sprint(got)
	}
	// Every commit is there: they are the record, whatever compaction files exist.
	all := append(commitNames(0, 9), compactions...)
	if got := deltas(all, NoVersion); got != "[3 4 5 6 7 8 9]" {
		t.Fatalf("all commits: deltas %s", got)
	}
	// Commits 3..5 gone: the narrowest file after which the commits resume stands in.
	gone := append(append(commitNames(0, 2), commitNames(6, 9)...), compactions...)
	if got := deltas(gone, NoVersion); got != "[3-5 6 7 8 9]" {
		t.Fatalf("3..5 gone: deltas %s", got)
	}
	// Commits 3..6 gone: only the wider file covers them.
	gone = append(append(commitNames(0, 2), commitNames(7, 9)...), compactions...)
	if got := deltas(gone, NoVersion); got != "[3-6 7 8 9]" {
		t.Fatalf("3..6 gone: deltas %s", got)
	}
	// Commits 7..9 gone: the 7-9 file would stand for the snapshot's own commit, which it cannot.
	gone = append(commitNames(0, 6), compactions...)
	gone = append(gone, v20(10)+".json")
	if got := deltas(gone, 8); !strings.Contains(got, "commit 7 (_delta_log/00000000000000000007.json) is missing") {
		t.Fatalf("at 8 with 7..9 gone: %s", got)
	}
	if got := deltas(gone, 10); got != "[3 4 5 6 7-9 10]" {
		t.Fatalf("at 10 with 7..9 gone: %s", got)
	}
}
