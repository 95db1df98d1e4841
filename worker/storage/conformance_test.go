package storage_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// TestStore_Conformance runs the same behavioural contract against every backend: whatever the Delta
// layer relies on must hold on local disk and on a real S3 server alike.
func TestStore_Conformance(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Run("PutThenGetAndStatReturnTheBytes", func(t *testing.T) { testPutGetStat(t, b) })
			t.Run("PutReplacesExistingObject", func(t *testing.T) { testPutReplaces(t, b) })
			t.Run("MissingKeysAreErrNotFound", func(t *testing.T) { testMissingKeys(t, b) })
			t.Run("DeleteRemovesAndIsIdempotent", func(t *testing.T) { testDelete(t, b) })
			t.Run("InvalidKeysAreRejected", func(t *testing.T) { testInvalidKeys(t, b) })
			t.Run("ListIsLexicographicAcrossNestedKeys", func(t *testing.T) { testListOrder(t, b) })
			t.Run("ListStopsWhenConsumerStops", func(t *testing.T) { testListEarlyStop(t, b) })
			t.Run("OpenServesRangedAndConcurrentReads", func(t *testing.T) { testRangedReads(t, b) })
			t.Run("CreateStreamsLargeObjectsByteForByte", func(t *testing.T) { testCreate(t, b) })
			t.Run("CreateAbortLeavesNothing", func(t *testing.T) { testCreateAbort(t, b) })
			t.Run("PutIfAbsentCreatesOnlyNewKeys", func(t *testing.T) { testPutIfAbsent(t, b) })
		})
	}
}

var ctx = context.Background()

func mustPut(t *testing.T, st storage.Store, key string, data []byte) {
	t.Helper()
	if err := st.Put(ctx, key, data); err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
}

func mustGet(t *testing.T, st storage.Store, key string) []byte {
	t.Helper()
	data, err := st.Get(ctx, key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return data
}

func listKeys(t *testing.T, st storage.Store, prefix, startAfter string) []string {
	t.Helper()
	keys := []string{}
	for info, err := range st.List(ctx, prefix, startAfter) {
		if err != nil {
			t.Fatalf("List(%q, %q): %v", prefix, startAfter, err)
		}
		keys = append(keys, info.Key)
	}
	return keys
}

// randomBytes is deterministic per seed so failures reproduce.
func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func testPutGetStat(t *testing.T, b backend) {
	st := b.open(t)
	for _, tc := range []struct {
		name, key string
		data      []byte
	}{
		{"small log file", "_delta_log/00000000000000000000.json", []byte(`{"protocol":{"minReaderVersion":1}}` + "\n")},
		{"empty object", "empty", nil},
		{"nested partition key with raw special characters", "date=2024-01-01/a b%20c+d.parquet", randomBytes(1, 3000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustPut(t, st, tc.key, tc.data)
			if got := mustGet(t, st, tc.key); !bytes.Equal(got, tc.data) {
				t.Fatalf("Get = %d bytes, want %d", len(got), len(tc.data))
			}
			info, err := st.Stat(ctx, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			if info.Key != tc.key || info.Size != int64(len(tc.data)) || info.ModTime.IsZero() {
				t.Fatalf("Stat = %+v, want key %q size %d and a modification time", info, tc.key, len(tc.data))
			}
		})
	}
	if leftovers := b.leftovers(t, st); len(leftovers) > 0 {
		t.Fatalf("writes left temp files behind: %v", leftovers)
	}
}

func testPutReplaces(t *testing.T, b backend) {
	st := b.open(t)
	mustPut(t, st, "_last_checkpoint", []byte("old content, longer than the new one"))
	mustPut(t, st, "_last_checkpoint", []byte("new"))
	if got := mustGet(t, st, "_last_checkpoint"); string(got) != "new" {
		t.Fatalf("Get = %q, want %q", got, "new")
	}
}

func testMissingKeys(t *testing.T, b backend) {
	st := b.open(t)
	mustPut(t, st, "dir/file", []byte("x"))
	for _, key := range []string{"missing", "dir/missing", "missing-dir/file", "dir/file/below-a-file", "dir"} {
		t.Run(key, func(t *testing.T) {
			if _, err := st.Get(ctx, key); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("Get: err = %v, want ErrNotFound", err)
			}
			if _, err := st.Stat(ctx, key); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("Stat: err = %v, want ErrNotFound", err)
			}
			if _, err := st.Open(ctx, key); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("Open: err = %v, want ErrNotFound", err)
			}
		})
	}
}

func testDelete(t *testing.T, b backend) {
	st := b.open(t)
	mustPut(t, st, "part/one.parquet", []byte("1"))
	mustPut(t, st, "part/two.parquet", []byte("2"))
	if err := st.Delete(ctx, "part/one.parquet"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Stat(ctx, "part/one.parquet"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Stat after Delete: err = %v, want ErrNotFound", err)
	}
	if got := listKeys(t, st, "", ""); !slices.Equal(got, []string{"part/two.parquet"}) {
		t.Fatalf("List after Delete = %q", got)
	}
	for _, key := range []string{"part/one.parquet", "never/existed"} {
		if err := st.Delete(ctx, key); err != nil {
			t.Fatalf("Delete(%q) of a missing key: %v, want nil", key, err)
		}
	}
}

func testInvalidKeys(t *testing.T, b backend) {
	st := b.open(t)
	for _, key := range []string{"", "/abs", "trailing/", "a//b", "../escape", "a/./b", "a/../b"} {
		t.Run(key, func(t *testing.T) {
			if err := st.Put(ctx, key, []byte("x")); err == nil {
				t.Errorf("Put(%q) succeeded, want an error", key)
			}
			if err := st.PutIfAbsent(ctx, key, []byte("x")); err == nil {
				t.Errorf("PutIfAbsent(%q) succeeded, want an error", key)
			}
			if _, err := st.Get(ctx, key); err == nil || errors.Is(err, storage.ErrNotFound) {
				t.Errorf("Get(%q): err = %v, want a validation error, not ErrNotFound", key, err)
			}
		})
	}
}

func testListOrder(t *testing.T, b backend) {
	st := b.open(t)
	// Written out of order, with the traps of a naive directory walk: "a.txt" < "a/..." because
	// '.' < '/', and "date=2024-01-01-x/" < "date=2024-01-01/" because '-' < '/'.
	keys := []string{
		"_delta_log/00000000000000000010.json",
		"_delta_log/_last_checkpoint",
		"_delta_log/00000000000000000009.json",
		"_delta_log/00000000000000000010.checkpoint.parquet",
		"_delta_log/00000000000000000011.json",
		"date=2024-01-01/part-00000.parquet",
		"date=2024-01-01-x/part-00000.parquet",
		"a/b/c.parquet",
		"a.txt",
		"a/b.parquet",
		"z",
	}
	for i, k := range keys {
		mustPut(t, st, k, randomBytes(uint64(i), i+1))
	}
	sorted := slices.Sorted(slices.Values(keys))

	for _, tc := range []struct {
		name, prefix, startAfter string
		want                     []string
	}{
		{"everything", "", "", sorted},
		{"log directory", "_delta_log/", "", []string{
			"_delta_log/00000000000000000009.json",
			"_delta_log/00000000000000000010.checkpoint.parquet",
			"_delta_log/00000000000000000010.json",
			"_delta_log/00000000000000000011.json",
			"_delta_log/_last_checkpoint",
		}},
		{"log after version 9", "_delta_log/", "_delta_log/00000000000000000009.json", []string{
			"_delta_log/00000000000000000010.checkpoint.parquet",
			"_delta_log/00000000000000000010.json",
			"_delta_log/00000000000000000011.json",
			"_delta_log/_last_checkpoint",
		}},
		{"prefix ending mid-name", "_delta_log/0000000000000000001", "", []string{
			"_delta_log/00000000000000000010.checkpoint.parquet",
			"_delta_log/00000000000000000010.json",
			"_delta_log/00000000000000000011.json",
		}},
		{"startAfter a missing key", "_delta_log/", "_delta_log/00000000000000000010.d", []string{
			"_delta_log/00000000000000000010.json",
			"_delta_log/00000000000000000011.json",
			"_delta_log/_last_checkpoint",
		}},
		{"startAfter before the prefix", "_delta_log/0000000000000000001", "_", []string{
			"_delta_log/00000000000000000010.checkpoint.parquet",
			"_delta_log/00000000000000000010.json",
			"_delta_log/00000000000000000011.json",
		}},
		{"startAfter past everything", "", "zz", []string{}},
		{"partition prefix mid-name spans two directories", "date=2024-01-01", "", []string{
			"date=2024-01-01-x/part-00000.parquet",
			"date=2024-01-01/part-00000.parquet",
		}},
		{"startAfter inside a nested directory", "a", "a/b.parquet", []string{"a/b/c.parquet"}},
		{"no match", "nothing-here/", "", []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := listKeys(t, st, tc.prefix, tc.startAfter); !slices.Equal(got, tc.want) {
				t.Fatalf("List(%q, %q)\n got %q\nwant %q", tc.prefix, tc.startAfter, got, tc.want)
			}
		})
	}

	t.Run("sizes are reported", func(t *testing.T) {
		for info, err := range st.List(ctx, "", "") {
			if err != nil {
				t.Fatal(err)
			}
			want := int64(slices.Index(keys, info.Key) + 1)
			if info.Size != want || info.ModTime.IsZero() {
				t.Errorf("%s: size %d modtime %v, want size %d and a modtime", info.Key, info.Size, info.ModTime, want)
			}
		}
	})
}

func testListEarlyStop(t *testing.T, b backend) {
	st := b.open(t)
	for _, k := range []string{"a/1", "a/2", "b/1", "c"} {
		mustPut(t, st, k, []byte(k))
	}
	var got []string
	for info, err := range st.List(ctx, "", "") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, info.Key)
		if len(got) == 2 {
			break
		}
	}
	if !slices.Equal(got, []string{"a/1", "a/2"}) {
		t.Fatalf("first two keys = %q", got)
	}
}

func testRangedReads(t *testing.T, b backend) {
	st := b.open(t)
	data := randomBytes(7, 200_000)
	mustPut(t, st, "data.parquet", data)
	r, err := st.Open(ctx, "data.parquet")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Size() != int64(len(data)) {
		t.Fatalf("Size = %d, want %d", r.Size(), len(data))
	}
	for _, tc := range []struct {
		name    string
		off     int64
		n       int
		wantN   int
		wantEOF bool
	}{
		{"footer length and magic", int64(len(data) - 8), 8, 8, false},
		{"start", 0, 4, 4, false},
		{"middle", 123_456, 10_000, 10_000, false},
		{"larger than read-ahead", 10, 150_000, 150_000, false},
		{"runs past the end", int64(len(data) - 100), 300, 100, true},
		{"at the end", int64(len(data)), 10, 0, true},
		{"beyond the end", int64(len(data) + 5), 10, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := make([]byte, tc.n)
			n, err := r.ReadAt(p, tc.off)
			if n != tc.wantN || (errors.Is(err, io.EOF)) != tc.wantEOF || (err != nil && !errors.Is(err, io.EOF)) {
				t.Fatalf("ReadAt(%d bytes at %d) = %d, %v; want %d, EOF=%t", tc.n, tc.off, n, err, tc.wantN, tc.wantEOF)
			}
			if n > 0 && !bytes.Equal(p[:n], data[tc.off:tc.off+int64(n)]) {
				t.Fatal("ReadAt returned the wrong bytes")
			}
		})
	}
	t.Run("concurrent readers", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for g := range 16 {
			wg.Go(func() {
				p := make([]byte, 3000)
				for i := range 10 {
					off := int64((g*7919 + i*104_729) % (len(data) - len(p)))
					if _, err := r.ReadAt(p, off); err != nil {
						errs <- err
						return
					}
					if !bytes.Equal(p, data[off:off+int64(len(p))]) {
						errs <- errors.New("concurrent ReadAt returned the wrong bytes")
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	})
}

func testCreate(t *testing.T, b backend) {
	for _, tc := range []struct {
		name   string
		size   int
		chunks []int // write sizes, cycled
	}{
		{"empty", 0, []int{1}},
		{"smaller than a part", 1000, []int{333}},
		{"exactly one part", testPartSize, []int{testPartSize}},
		{"several parts with odd writes", 5*testPartSize + 12345, []int{1, 4095, 70_000, 100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := b.open(t)
			data := randomBytes(uint64(tc.size), tc.size)
			w, err := st.Create(ctx, "out/part-0001.parquet")
			if err != nil {
				t.Fatal(err)
			}
			checked := false
			for off, i := 0, 0; off < len(data); i++ {
				n := min(tc.chunks[i%len(tc.chunks)], len(data)-off)
				if _, err := w.Write(data[off : off+n]); err != nil {
					t.Fatalf("Write: %v", err)
				}
				off += n
				if !checked && off >= len(data)/2 {
					checked = true
					if _, err := st.Stat(ctx, "out/part-0001.parquet"); !errors.Is(err, storage.ErrNotFound) {
						t.Fatalf("object visible before Close: Stat err = %v", err)
					}
				}
			}
			if err := w.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if got := mustGet(t, st, "out/part-0001.parquet"); !bytes.Equal(got, data) {
				t.Fatalf("stored %d bytes differ from the %d written", len(got), len(data))
			}
			if err := w.Abort(); err != nil {
				t.Fatalf("Abort after Close: %v, want nil", err)
			}
			if _, err := st.Stat(ctx, "out/part-0001.parquet"); err != nil {
				t.Fatalf("Abort after Close removed the object: %v", err)
			}
			if leftovers := b.leftovers(t, st); len(leftovers) > 0 {
				t.Fatalf("Create left temp files or uploads behind: %v", leftovers)
			}
		})
	}
}

func testCreateAbort(t *testing.T, b backend) {
	for _, tc := range []struct {
		name     string
		existing []byte
		size     int
	}{
		{"new key, single part", nil, 100},
		{"new key, multipart upload in progress", nil, 3*testPartSize + 5},
		{"existing object is kept", []byte("previous version"), 3*testPartSize + 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := b.open(t)
			if tc.existing != nil {
				mustPut(t, st, "obj", tc.existing)
			}
			w, err := st.Create(ctx, "obj")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(randomBytes(3, tc.size)); err != nil {
				t.Fatal(err)
			}
			if err := w.Abort(); err != nil {
				t.Fatalf("Abort: %v", err)
			}
			if err := w.Close(); err == nil {
				t.Fatal("Close after Abort succeeded, want an error")
			}
			got, err := st.Get(ctx, "obj")
			switch {
			case tc.existing == nil && !errors.Is(err, storage.ErrNotFound):
				t.Fatalf("after Abort Get = %d bytes, %v; want ErrNotFound", len(got), err)
			case tc.existing != nil && !bytes.Equal(got, tc.existing):
				t.Fatalf("after Abort Get = %q, %v; want the previous version", got, err)
			}
			if leftovers := b.leftovers(t, st); len(leftovers) > 0 {
				t.Fatalf("Abort left temp files or uploads behind: %v", leftovers)
			}
		})
	}
}

func testPutIfAbsent(t *testing.T, b backend) {
	st := b.open(t)
	const key = "_delta_log/00000000000000000001.json"
	if err := st.PutIfAbsent(ctx, key, []byte("first")); err != nil {
		t.Fatalf("PutIfAbsent on a new key: %v", err)
	}
	err := st.PutIfAbsent(ctx, key, []byte("second"))
	if !errors.Is(err, storage.ErrAlreadyExists) {
		t.Fatalf("PutIfAbsent on an existing key: err = %v, want ErrAlreadyExists", err)
	}
	if got := mustGet(t, st, key); string(got) != "first" {
		t.Fatalf("existing content changed to %q", got)
	}
	if err := st.PutIfAbsent(ctx, "_delta_log/00000000000000000002.json", nil); err != nil {
		t.Fatalf("PutIfAbsent of an empty object: %v", err)
	}
	if leftovers := b.leftovers(t, st); len(leftovers) > 0 {
		t.Fatalf("PutIfAbsent left temp files behind: %v", leftovers)
	}
}
