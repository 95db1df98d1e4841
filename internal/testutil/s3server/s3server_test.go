package s3server_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/internal/testutil/s3server"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

func TestStart_ServesAnEmptyBucketAndStopsWithTheTest(t *testing.T) {
	var endpoint string
	t.Run("server", func(t *testing.T) {
		srv := s3server.Start(t)
		endpoint = srv.Endpoint
		if !strings.HasPrefix(srv.Endpoint, "http://127.0.0.1:") {
			t.Fatalf("Endpoint = %q, want a loopback URL", srv.Endpoint)
		}
		if len(srv.AccessKeyID) < 3 || srv.SecretAccessKey == "" {
			t.Fatal("no usable keys generated")
		}
		st, err := storage.Open(context.Background(), srv.Location("t"), storage.Config{S3: srv.S3Config()})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Put(context.Background(), "dir/obj", []byte("on disk")); err != nil {
			t.Fatal(err)
		}
		// Objects are plain files under the data directory.
		data, err := os.ReadFile(srv.ObjectPath("t/dir/obj"))
		if err != nil || string(data) != "on disk" {
			t.Fatalf("raw object = %q, %v", data, err)
		}
		if filepath.Dir(filepath.Dir(filepath.Dir(srv.ObjectPath("t/dir/obj")))) != filepath.Join(srv.DataDir(), srv.Bucket) {
			t.Fatalf("ObjectPath is not under DataDir/Bucket")
		}
	})
	host := strings.TrimPrefix(endpoint, "http://")
	deadline := time.Now().Add(5 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", host, time.Second)
		if err != nil {
			return // stopped
		}
		conn.Close()
		if time.Now().After(deadline) {
			t.Fatalf("server at %s still accepting connections after its test ended", endpoint)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestBinary_MissingOverrideSaysHowToBuild(t *testing.T) {
	t.Setenv(s3server.EnvBinary, filepath.Join(t.TempDir(), "nope"))
	_, err := s3server.Binary()
	if err == nil || !strings.Contains(err.Error(), "hack/build-s3server.sh") {
		t.Fatalf("err = %v, want a pointer to hack/build-s3server.sh", err)
	}
}

func TestUploadDir_ServesALocalFixtureTree(t *testing.T) {
	fixture := t.TempDir()
	for name, data := range map[string]string{
		"_delta_log/00000000000000000000.json": "{}\n",
		"date=2024-01-01/part-0.parquet":       "PAR1",
	} {
		p := filepath.Join(fixture, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv := s3server.Start(t)
	loc := srv.UploadDir(t, fixture, "tables/fixture")
	st, err := storage.Open(context.Background(), loc, storage.Config{S3: srv.S3Config()})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for info, err := range st.List(context.Background(), "", "") {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, info.Key)
	}
	if strings.Join(keys, ",") != "_delta_log/00000000000000000000.json,date=2024-01-01/part-0.parquet" {
		t.Fatalf("uploaded keys = %q", keys)
	}
}
