package torture

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/deltakeeper/deltakeeper/internal/testutil/azurite"
	"github.com/deltakeeper/deltakeeper/internal/testutil/s3server"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// site is one table location under torture, with what the harness needs to look at it behind the
// project's back.
type site struct {
	backend  string // "local", "s3" or "azure"
	location string // the table's URI, as the CLI gets it
	// store opens the table directly (never through a fault proxy), for fixtures and checks.
	store storage.Store
	// rawDir holds the table's files as plain files: the table directory, or the S3 server's
	// object directory of the table's prefix (read-only: writes must go through S3); empty on
	// Azure, whose blobs are looked at through the SDK (backend_azure_test.go).
	rawDir string
	srv    *s3server.Server // nil on local disk and Azure
	az     *azurite.Server  // nil on local disk and S3
	prefix string           // the table's key prefix on S3 and Azure
}

// backend opens a fresh, empty table location.
type backend struct {
	name string
	open func(t *testing.T, table string) *site
}

var backends = []backend{{"local", openLocal}, {"s3", openS3}, {"azure", openAzure}}

func openLocal(t *testing.T, table string) *site {
	dir := keptDir(t)
	loc := filepath.Join(dir, table)
	st, err := storage.Open(context.Background(), loc, storage.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return &site{backend: "local", location: loc, store: st, rawDir: loc}
}

func openS3(t *testing.T, table string) *site {
	srv := s3server.Start(t)
	st, err := storage.Open(context.Background(), srv.Location(table), storage.Config{S3: srv.S3Config()})
	if err != nil {
		t.Fatal(err)
	}
	s := &site{backend: "s3", location: srv.Location(table), store: st, rawDir: srv.ObjectPath(table), srv: srv, prefix: table}
	// Registered after the server's own cleanup, so it runs first, while the objects still exist.
	dir := keptDir(t)
	t.Cleanup(func() {
		if t.Failed() {
			if err := os.CopyFS(filepath.Join(dir, table), os.DirFS(s.rawDir)); err != nil {
				t.Logf("copying the failed table out of the S3 server: %v", err)
			}
		}
	})
	return s
}

// keptDir is a directory for the test's tables that outlives a failing test, so that the table
// can be inspected; a passing test removes it.
func keptDir(t *testing.T) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	dir, err := os.MkdirTemp("", "deltakeeper-torture-"+name+"-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("tables kept for inspection in %s; %s", dir, replayHint(t))
			return
		}
		os.RemoveAll(dir)
	})
	return dir
}

// env is the environment a child process needs to open the site (through endpoint on S3, which
// may be a fault proxy; "" means the server itself).
func (s *site) env(endpoint string) []string {
	env := os.Environ()
	if s.az != nil {
		return append(env, s.az.Env()...)
	}
	if s.srv == nil {
		return env
	}
	cfg := s.srv.S3Config()
	if endpoint == "" {
		endpoint = cfg.Endpoint
	}
	return append(env,
		"AWS_ACCESS_KEY_ID="+cfg.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+cfg.SecretAccessKey,
		"AWS_REGION="+cfg.Region, "AWS_ENDPOINT_URL_S3="+endpoint,
		storage.EnvS3PathStyle+"=true",
		// Faults are retried within milliseconds rather than the SDK's seconds.
		storage.EnvS3MaxBackoff+"=50ms")
}

// cli prepares a run of the deltakeeper binary on the site.
func (s *site) cli(ctx context.Context, endpoint string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, cliBinary, args...)
	cmd.Env = s.env(endpoint)
	return cmd
}

// rawFile is one file found in rawDir.
type rawFile struct {
	key     string // relative, '/'-separated
	size    int64
	modTime time.Time
}

// rawFiles lists every file under rawDir, hidden ones included, without the project's storage code.
func (s *site) rawFiles(t testing.TB) []rawFile {
	t.Helper()
	files, err := s.listRaw()
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func (s *site) listRaw() ([]rawFile, error) {
	if s.az != nil {
		return s.listAzure()
	}
	var out []rawFile
	err := filepath.WalkDir(s.rawDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil // removed while walking (a concurrent writer's temp)
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		rel, err := filepath.Rel(s.rawDir, p)
		if err != nil {
			return err
		}
		out = append(out, rawFile{key: filepath.ToSlash(rel), size: info.Size(), modTime: info.ModTime()})
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("listing %s: %w", s.rawDir, err)
	}
	return out, nil
}

// readRaw reads one file of the table behind the project's back.
func (s *site) readRaw(key string) ([]byte, error) {
	if s.az != nil {
		return s.readAzure(key)
	}
	return os.ReadFile(filepath.Join(s.rawDir, filepath.FromSlash(key)))
}

// ageLog makes every file of _delta_log look older than the tables' log retention (one day), so
// that log cleanup has work. On local disk the modification times change; on S3 every log object
// is written again, byte for byte, with rclone's mtime metadata (the server's view of its own
// directory must not be changed behind its back).
func (s *site) ageLog(t testing.TB, age time.Duration) {
	t.Helper()
	if !s.canAgeLog() {
		t.Fatalf("ageLog: the %s backend cannot change modification times; check canAgeLog first", s.backend)
	}
	when := time.Now().Add(-age)
	if s.srv == nil {
		for _, f := range s.rawFiles(t) {
			if strings.HasPrefix(f.key, "_delta_log/") {
				if err := os.Chtimes(filepath.Join(s.rawDir, filepath.FromSlash(f.key)), when, when); err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
			}
		}
		return
	}
	ctx := context.Background()
	s3s := s.store.(*storage.S3Store)
	mtime := strconv.FormatFloat(float64(when.UnixNano())/1e9, 'f', 9, 64)
	for info, err := range s.store.List(ctx, "_delta_log/", "") {
		if err != nil {
			t.Fatal(err)
		}
		data, err := s.store.Get(ctx, info.Key)
		if err != nil {
			t.Fatal(err)
		}
		key := s.prefix + "/" + info.Key
		_, err = s3s.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s3s.Bucket()), Key: &key,
			Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))), Metadata: map[string]string{"mtime": mtime}})
		if err != nil {
			t.Fatalf("ageing %s: %v", key, err)
		}
	}
	for info, err := range s.store.List(ctx, "_delta_log/", "") {
		if err == nil && info.ModTime.After(when.Add(time.Minute)) {
			t.Fatalf("ageing %s on the S3 server did not take: modified %s", info.Key, info.ModTime)
		}
	}
}

// incompleteUploads lists the multipart uploads in progress under the table's prefix (S3 only): a
// writer killed in the middle of a large object leaves one.
func (s *site) incompleteUploads(t testing.TB) []string {
	t.Helper()
	if s.srv == nil {
		return nil
	}
	s3s := s.store.(*storage.S3Store)
	out, err := s3s.Client().ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{
		Bucket: aws.String(s3s.Bucket()), Prefix: aws.String(s.prefix + "/")})
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode() == "NoSuchUpload" {
		// The test server (gofakes3) answers so for a bucket that never had an upload, where S3
		// returns an empty list.
		return nil
	}
	if err != nil {
		t.Fatalf("listing multipart uploads: %v", err)
	}
	var keys []string
	for _, u := range out.Uploads {
		keys = append(keys, fmt.Sprintf("%s (started %s)", aws.ToString(u.Key), aws.ToTime(u.Initiated).Format(time.RFC3339)))
	}
	return keys
}
