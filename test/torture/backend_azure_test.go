package torture

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/deltakeeper/deltakeeper/internal/testutil/azurite"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// The Azure backend: a table in a fresh Azurite's container. Azurite keeps blobs in its own database,
// not as plain files, so the harness looks at the table with the Azure SDK's container client
// directly (listing, downloading, properties), never through the project's Store.

func openAzure(t *testing.T, table string) *site {
	srv := azurite.Start(t)
	st, err := storage.Open(context.Background(), srv.Location(table), storage.Config{Azure: srv.AzureConfig()})
	if err != nil {
		t.Fatal(err)
	}
	s := &site{backend: "azure", location: srv.Location(table), store: st, az: srv, prefix: table}
	// Registered after the server's own cleanup, so it runs first, while the blobs still exist.
	dir := keptDir(t)
	t.Cleanup(func() {
		if t.Failed() {
			if err := s.copyAzureOut(filepath.Join(dir, table)); err != nil {
				t.Logf("copying the failed table out of Azurite: %v", err)
			}
		}
	})
	return s
}

func (s *site) container() *container.Client { return s.store.(*storage.AzureStore).Container() }

// listAzure lists every blob under the table's prefix.
func (s *site) listAzure() ([]rawFile, error) {
	ctx := context.Background()
	prefix := s.prefix + "/"
	pager := s.container().NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix})
	var out []rawFile
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing Azurite's container under %s: %w", prefix, err)
		}
		for _, b := range page.Segment.BlobItems {
			if b.Name == nil || b.Properties == nil {
				continue
			}
			f := rawFile{key: strings.TrimPrefix(*b.Name, prefix)}
			if b.Properties.ContentLength != nil {
				f.size = *b.Properties.ContentLength
			}
			if b.Properties.LastModified != nil {
				f.modTime = *b.Properties.LastModified
			}
			out = append(out, f)
		}
	}
	return out, nil
}

// readAzure downloads one blob of the table; a missing one is an os.ErrNotExist, as on disk.
func (s *site) readAzure(key string) ([]byte, error) {
	resp, err := s.container().NewBlobClient(s.prefix+"/"+key).DownloadStream(context.Background(), nil)
	if err != nil {
		if bloberror.HasCode(err, bloberror.BlobNotFound) {
			return nil, fmt.Errorf("%s: %w", key, os.ErrNotExist)
		}
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// modTimeAzure is a blob's Last-Modified.
func (s *site) modTimeAzure(key string) (time.Time, error) {
	resp, err := s.container().NewBlobClient(s.prefix+"/"+key).GetProperties(context.Background(), nil)
	if err != nil {
		return time.Time{}, err
	}
	if resp.LastModified == nil {
		return time.Time{}, fmt.Errorf("%s has no Last-Modified", key)
	}
	return *resp.LastModified, nil
}

func (s *site) copyAzureOut(dir string) error {
	files, err := s.listAzure()
	if err != nil {
		return err
	}
	for _, f := range files {
		data, err := s.readAzure(f.key)
		if err != nil {
			return err
		}
		p := filepath.Join(dir, filepath.FromSlash(f.key))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// openRaw opens one file of the table for random access, behind the project's back.
func (s *site) openRaw(key string) (io.ReaderAt, int64, func(), error) {
	if s.az != nil {
		data, err := s.readAzure(key)
		if err != nil {
			return nil, 0, nil, err
		}
		return bytes.NewReader(data), int64(len(data)), func() {}, nil
	}
	f, err := os.Open(filepath.Join(s.rawDir, filepath.FromSlash(key)))
	if err != nil {
		return nil, 0, nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, nil, err
	}
	return f, info.Size(), func() { f.Close() }, nil
}

// modTime is when one file of the table was last written.
func (s *site) modTime(key string) (time.Time, error) {
	if s.az != nil {
		return s.modTimeAzure(key)
	}
	info, err := os.Stat(filepath.Join(s.rawDir, filepath.FromSlash(key)))
	if err != nil {
		return time.Time{}, err
	}
	return info.ModTime(), nil
}

// canAgeLog reports whether ageLog can make the log look old. Azure sets Last-Modified itself and
// offers no way to change it (Azurite neither), and log cleanup goes by it: on Azure the log stays
// young, and log cleanup must delete nothing.
func (s *site) canAgeLog() bool { return s.az == nil }
