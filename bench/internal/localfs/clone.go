package localfs

import (
	"io"
	"os"
	"path/filepath"
	"strings"
)

// CloneTable makes a fresh copy of a local table at dst (removing what was there): data files as hard
// links, since maintenance never modifies a data file, and the log as real copies, so that a commit,
// checkpoint or _last_checkpoint written to the copy never reaches the original.
func CloneTable(src, dst string) error {
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if strings.HasPrefix(rel, "_delta_log") {
			return CopyFile(p, target)
		}
		return os.Link(p, target)
	})
}

// CopyFile copies a file's bytes to a new file at dst.
func CopyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
