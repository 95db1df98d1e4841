package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// sparseCheckout fetches only paths of the repository at commit into dir: a shallow, blobless fetch of the
// one commit and a sparse checkout, so a large repository (delta-io/delta) costs only the tables' bytes.
func sparseCheckout(url, commit string, paths []string, dir string) error {
	steps := [][]string{
		{"init", "-q", dir},
		{"-C", dir, "remote", "add", "origin", url},
		{"-C", dir, "sparse-checkout", "set", "--no-cone"},
		{"-C", dir, "fetch", "-q", "--depth=1", "--filter=blob:none", "origin", commit},
		{"-C", dir, "checkout", "-q", "FETCH_HEAD"},
	}
	patterns := make([]string, 0, len(paths))
	for _, p := range paths {
		patterns = append(patterns, "/"+p)
	}
	steps[2] = append(steps[2], patterns...)
	for _, args := range steps {
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// install places one table from the checkout into dir/<source>/<name>, through a temporary directory so
// that an interrupted fetch leaves no half table behind.
func install(e entry, checkout, work, dir string) error {
	src := filepath.Join(checkout, filepath.FromSlash(e.RepoPath))
	stage, err := os.MkdirTemp(work, "stage-")
	if err != nil {
		return err
	}
	switch e.Kind {
	case kindGitDir:
		err = copyTree(src, filepath.Join(stage, "delta"))
	case kindDAT:
		err = copyTree(src, stage)
	case kindTarGolden, kindTarData:
		err = unpackArchive(src, e.ArchiveSHA256, stage, work)
	}
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(stage, "delta", "_delta_log")); err != nil {
		return fmt.Errorf("no table at %s (no delta/_delta_log after the fetch)", e.RepoPath)
	}
	if !e.curated() {
		n, err := treeBytes(stage)
		if err != nil {
			return err
		}
		if n != e.Bytes {
			return fmt.Errorf("fetched %d bytes, the index records %d: the upstream files differ from the team's", n, e.Bytes)
		}
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, e.raw, "", " "); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(stage, "SOURCE.json"), pretty.Bytes(), 0o644); err != nil {
		return err
	}
	target := filepath.Join(dir, e.Source, e.Name)
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	return os.Rename(stage, target)
}

// unpackArchive checks a .tar.zst against its sha256 and unpacks it: the directory holding _delta_log
// becomes stage/delta, and an expected/ directory beside it stage/expected.
func unpackArchive(file, wantSHA, stage, work string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("the archive is not in the checkout: %w", err)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != wantSHA {
		return fmt.Errorf("archive sha256 %s, the index records %s: refusing it", got, wantSHA)
	}
	tmp, err := os.MkdirTemp(work, "unpack-")
	if err != nil {
		return err
	}
	if err := untarZstd(data, tmp); err != nil {
		return err
	}
	var roots []string
	err = filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "_delta_log" {
			roots = append(roots, filepath.Dir(p))
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(roots) != 1 {
		return fmt.Errorf("the archive holds %d tables (directories with _delta_log), want 1", len(roots))
	}
	if err := copyTree(roots[0], filepath.Join(stage, "delta")); err != nil {
		return err
	}
	expected := filepath.Join(filepath.Dir(roots[0]), "expected")
	if st, err := os.Stat(expected); err == nil && st.IsDir() {
		return copyTree(expected, filepath.Join(stage, "expected"))
	}
	return nil
}

// untarZstd unpacks regular files and directories, refusing entries that would land outside dir.
func untarZstd(data []byte, dir string) error {
	zr, err := zstd.NewReader(bytes.NewReader(data))
	if err != nil {
		return err
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the archive: %w", err)
		}
		name := filepath.Clean(filepath.FromSlash(h.Name))
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, ".."+string(filepath.Separator)) {
			return fmt.Errorf("archive entry %q climbs out of its directory", h.Name)
		}
		p := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o644)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}

// copyTree copies the regular files under src to dst, keeping names byte for byte.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("%w (is the path in the repository at that commit?)", err)
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return copyFile(p, target)
	})
}

func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}

// treeBytes sums the sizes of the regular files under dir (the index's bytes, SOURCE.json excluded).
func treeBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	return n, err
}
