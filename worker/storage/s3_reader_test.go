package storage_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/internal/testutil/s3server"
)

// Parquet readers read the footer as "last 8 bytes, then the footer", then pages through small
// buffered reads (parquet-go's default buffer is 4 KiB). Read-ahead turns that from one GET per
// read into one GET per window; this test pins the request counts and logs the time saved.
func TestS3Open_ReadAheadCutsRequestsForSmallSequentialReads(t *testing.T) {
	srv := s3server.Start(t)
	data := randomBytes(42, 3<<20+1234)
	mustPut(t, openS3(t, srv, srv.S3Config(), "ra"), "big.parquet", data)

	for _, tc := range []struct {
		name          string
		readAhead     int64
		maxFooterGets int
		maxScanGets   int
	}{
		{"1 MiB read-ahead", 1 << 20, 1, 4},
		{"read-ahead disabled", -1, 2, len(data)/4096 + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProxy(t, srv, nil)
			cfg := p.config(srv)
			cfg.ReadAhead = tc.readAhead
			st := openS3(t, srv, cfg, "ra")
			start := time.Now()
			r, err := st.Open(ctx, "big.parquet")
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			size := r.Size()

			// Footer: 8-byte trailer, then a 20 KiB footer before it.
			tail := make([]byte, 8)
			if _, err := r.ReadAt(tail, size-8); err != nil {
				t.Fatal(err)
			}
			footer := make([]byte, 20<<10)
			if _, err := r.ReadAt(footer, size-8-int64(len(footer))); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(footer, data[size-8-int64(len(footer)):size-8]) || !bytes.Equal(tail, data[size-8:]) {
				t.Fatal("footer reads returned the wrong bytes")
			}
			if got := p.count(http.MethodGet); got > tc.maxFooterGets {
				t.Errorf("footer took %d GETs, want at most %d", got, tc.maxFooterGets)
			}

			// Sequential scan in 4 KiB reads.
			var scanned bytes.Buffer
			buf := make([]byte, 4096)
			for off := int64(0); off < size; off += int64(len(buf)) {
				n, err := r.ReadAt(buf, off)
				if err != nil && !errors.Is(err, io.EOF) {
					t.Fatal(err)
				}
				scanned.Write(buf[:n])
			}
			if !bytes.Equal(scanned.Bytes(), data) {
				t.Fatal("sequential scan returned the wrong bytes")
			}
			if got := p.count(http.MethodGet); got > tc.maxFooterGets+tc.maxScanGets {
				t.Errorf("footer + scan took %d GETs, want at most %d", got, tc.maxFooterGets+tc.maxScanGets)
			}
			t.Logf("%s: %d GETs, %s", tc.name, p.count(http.MethodGet), time.Since(start).Round(time.Millisecond))
		})
	}
}

func TestS3Open_ReadFailsOnceTheObjectIsReplaced(t *testing.T) {
	srv := s3server.Start(t)
	cfg := srv.S3Config()
	cfg.ReadAhead = -1 // every read goes to the server
	st := openS3(t, srv, cfg, "replace")
	mustPut(t, st, "00000000000000000010.checkpoint.parquet", []byte("version one of the checkpoint"))
	r, err := st.Open(ctx, "00000000000000000010.checkpoint.parquet")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p := make([]byte, 7)
	if _, err := r.ReadAt(p, 0); err != nil || string(p) != "version" {
		t.Fatalf("ReadAt before replacement = %q, %v", p, err)
	}
	mustPut(t, st, "00000000000000000010.checkpoint.parquet", []byte("VERSION TWO, a different writer's checkpoint"))
	_, err = r.ReadAt(p, 8)
	if err == nil || !strings.Contains(err.Error(), "replaced since it was opened") {
		t.Fatalf("ReadAt after replacement: err = %v, want a refusal to mix versions", err)
	}
}
