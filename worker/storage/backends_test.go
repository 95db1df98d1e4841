package storage_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/deltakeeper/deltakeeper/internal/testutil/azurite"
	"github.com/deltakeeper/deltakeeper/internal/testutil/gcsserver"
	"github.com/deltakeeper/deltakeeper/internal/testutil/s3server"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// testPartSize makes Create go multipart after 64 KiB, so small test objects exercise several parts.
const testPartSize = 64 << 10

// backend opens fresh, empty stores of one kind and knows where that kind could leave debris.
type backend struct {
	name string
	// open returns a new store with an empty root.
	open func(t *testing.T) storage.Store
	// leftovers lists temp files or unfinished uploads under the store's root that a completed or
	// aborted write must not leave behind.
	leftovers func(t *testing.T, st storage.Store) []string
	// env is what a child process needs to open the same location with storage.ConfigFromEnv.
	env func(st storage.Store) []string
	// unlistedDebris, when set, says why an interrupted write of this kind leaves nothing that
	// Leftovers could report or remove (the service keeps it invisibly and discards it itself).
	unlistedDebris string
}

func localBackend() backend {
	return backend{
		name: "local",
		open: func(t *testing.T) storage.Store {
			st, err := storage.Open(context.Background(), filepath.Join(t.TempDir(), "table"), storage.Config{})
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
		leftovers: func(t *testing.T, st storage.Store) []string {
			return hiddenFiles(t, st.(*storage.LocalStore).Root(), ".")
		},
		env: func(storage.Store) []string { return nil },
	}
}

// s3Backend shares one server between the stores it opens; each store gets its own prefix so tests
// also cover the prefix mapping.
func s3Backend(t *testing.T) backend {
	srv := s3server.Start(t)
	var n atomic.Int64
	return backend{
		name: "s3",
		open: func(t *testing.T) storage.Store {
			cfg := srv.S3Config()
			cfg.PartSize = testPartSize
			st, err := storage.Open(context.Background(), srv.Location(fmt.Sprintf("tables/t%d", n.Add(1))), storage.Config{S3: cfg})
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
		leftovers: func(t *testing.T, st storage.Store) []string {
			s3st := st.(*storage.S3Store)
			prefix := strings.TrimPrefix(strings.TrimPrefix(st.Location(), "s3://"+s3st.Bucket()), "/") + "/"
			out, err := s3st.Client().ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{
				Bucket: aws.String(s3st.Bucket()), Prefix: aws.String(prefix),
			})
			var apiErr smithy.APIError
			if errors.As(err, &apiErr) && apiErr.ErrorCode() == "NoSuchUpload" {
				// rclone answers 404 NoSuchUpload until the first multipart upload of a user.
				out, err = &s3.ListMultipartUploadsOutput{}, nil
			}
			if err != nil {
				t.Fatalf("listing multipart uploads: %v", err)
			}
			var left []string
			for _, u := range out.Uploads {
				left = append(left, "upload "+aws.ToString(u.Key))
			}
			// rclone stages uploads as hidden ".rclone_temp_*" files next to the target.
			return append(left, hiddenFiles(t, srv.ObjectPath(strings.TrimSuffix(prefix, "/")), ".rclone_temp")...)
		},
		env: func(storage.Store) []string {
			return []string{
				"AWS_ACCESS_KEY_ID=" + srv.AccessKeyID,
				"AWS_SECRET_ACCESS_KEY=" + srv.SecretAccessKey,
				"AWS_ENDPOINT_URL_S3=" + srv.Endpoint,
				"AWS_REGION=" + s3server.Region,
				storage.EnvS3PathStyle + "=true",
			}
		},
	}
}

// azureBackend runs against Azurite; like s3Backend, each store gets its own prefix.
func azureBackend(t *testing.T) backend {
	srv := azurite.Start(t)
	var n atomic.Int64
	return backend{
		name: "azure",
		open: func(t *testing.T) storage.Store {
			cfg := srv.AzureConfig()
			cfg.BlockSize = testPartSize
			st, err := storage.Open(context.Background(), srv.Location(fmt.Sprintf("tables/t%d", n.Add(1))), storage.Config{Azure: cfg})
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
		// Every write is one Put Blob or a Put Block List of staged blocks: no temporary names. Staged
		// blocks are checked by TestAzureCreate_CommitsEveryStagedBlock.
		leftovers:      func(*testing.T, storage.Store) []string { return nil },
		env:            func(storage.Store) []string { return srv.Env() },
		unlistedDebris: "uncommitted blocks cannot be deleted; Azure discards them after a week",
	}
}

// gcsBackend runs against fake-gcs-server; each store gets its own prefix.
func gcsBackend(t *testing.T) backend {
	srv := gcsserver.Start(t)
	var n atomic.Int64
	return backend{
		name: "gcs",
		open: func(t *testing.T) storage.Store {
			cfg := srv.GCSConfig()
			cfg.ChunkSize = testGCSChunkSize
			st, err := storage.Open(context.Background(), srv.Location(fmt.Sprintf("tables/t%d", n.Add(1))), storage.Config{GCS: cfg})
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
		// Uploads are single requests or resumable sessions finalised at Close: no temporary names.
		leftovers:      func(*testing.T, storage.Store) []string { return nil },
		env:            func(storage.Store) []string { return srv.Env() },
		unlistedDebris: "resumable upload sessions cannot be listed; GCS discards them after a week",
	}
}

// testGCSChunkSize is GCS's smallest resumable chunk, so "several parts" objects take several chunks.
const testGCSChunkSize = 256 << 10

// backends returns every Store implementation, each to be run through the same tests.
func backends(t *testing.T) []backend {
	return []backend{localBackend(), s3Backend(t), azureBackend(t), gcsBackend(t)}
}

// hiddenFiles lists files under dir whose name starts with namePrefix.
func hiddenFiles(t *testing.T, dir, namePrefix string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if !d.IsDir() && strings.HasPrefix(d.Name(), namePrefix) {
			found = append(found, p)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walking %s: %v", dir, err)
	}
	return found
}
