// Package killedwriter leaves behind what a writer SIGKILLed in the middle of a write leaves: a real
// child process (the test binary, re-executed) starts a streaming write through worker/storage, sends
// more than one S3 part, and is killed. On local disk that leaves the write's temp file, on S3 an
// incomplete multipart upload.
//
// A package using it declares
//
//	func TestHelperProcessKilledWriter(t *testing.T) { killedwriter.Run(t) }
//
// and calls Leave from its tests.
package killedwriter

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// PartSize is the S3 part size of the killed write; Leave writes Bytes, more than one part.
const (
	PartSize = 64 << 10
	Bytes    = 3*PartSize + 100
)

const (
	envLocation = "DELTAKEEPER_KILLEDWRITER_LOCATION"
	envKey      = "DELTAKEEPER_KILLEDWRITER_KEY"
	envS3       = "DELTAKEEPER_KILLEDWRITER_S3"
)

// Run is the child process's side: when the environment names a write, it writes and waits to be
// killed; otherwise (the ordinary test run) it returns at once.
func Run(t *testing.T) {
	loc := os.Getenv(envLocation)
	if loc == "" {
		return
	}
	var cfg storage.S3Config
	if err := json.Unmarshal([]byte(os.Getenv(envS3)), &cfg); err != nil {
		t.Fatal(err)
	}
	cfg.PartSize = PartSize
	ctx := context.Background()
	st, err := storage.Open(ctx, loc, storage.Config{S3: cfg})
	if err != nil {
		t.Fatal(err)
	}
	w, err := st.Create(ctx, os.Getenv(envKey))
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, Bytes)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	fmt.Println("killedwriter: ready")
	time.Sleep(time.Hour)
}

// Leave runs a writer of key at location (cfg is the S3 configuration, zero for local disk) and
// SIGKILLs it once it has written Bytes.
func Leave(t *testing.T, location string, cfg storage.S3Config, key string) {
	t.Helper()
	s3cfg, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcessKilledWriter$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), envLocation+"="+location, envKey+"="+key, envS3+"="+string(s3cfg))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }() // reaps the writer; it is expected to die of SIGKILL
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if sc.Text() == "killedwriter: ready" {
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	_ = cmd.Process.Kill() // it already exited, which is the failure reported
	t.Fatalf("the writer process of %s/%s exited before it had written (see its output above)", location, key)
}
