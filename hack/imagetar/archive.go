package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// epoch is the timestamp of every file and of the image itself: a fixed time keeps the output reproducible.
var epoch = time.Unix(0, 0).UTC()

// Spec describes the image to build.
type Spec struct {
	Ref        string // reference recorded in manifest.json (RepoTags)
	Entrypoint string // absolute path inside the image
	User       string // "uid:gid"
	CABundle   string // host file installed as /etc/ssl/certs/ca-certificates.crt; empty for none
	Arch       string
	Env        []string
	Files      []File
}

// File is one host file placed in the image.
type File struct {
	Src  string
	Dest string
	Mode fs.FileMode // 0 means: the source's permission bits
}

// parseAdd parses SRC:DEST[:MODE].
func parseAdd(s string) (File, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || !path.IsAbs(parts[1]) {
		return File{}, fmt.Errorf("-add %q: want SRC:DEST[:MODE] with an absolute DEST", s)
	}
	f := File{Src: parts[0], Dest: parts[1]}
	if len(parts) == 3 {
		m, err := strconv.ParseUint(parts[2], 8, 32)
		if err != nil || m > 0o7777 {
			return File{}, fmt.Errorf("-add %q: MODE must be octal permission bits such as 0755", s)
		}
		f.Mode = fs.FileMode(m)
	}
	return f, nil
}

// entry is one item of the layer: a directory or a regular file owned by uid:gid.
type entry struct {
	name     string // without leading slash
	dir      bool
	mode     int64
	uid, gid int
	data     []byte
}

// Write writes the docker-archive for spec to w and returns the image id (the config's sha256).
func Write(w io.Writer, spec Spec) (string, error) {
	if err := checkUser(spec.User); err != nil {
		return "", err
	}
	entries, err := rootfs(spec)
	if err != nil {
		return "", err
	}
	layer, err := layerTar(entries)
	if err != nil {
		return "", err
	}
	layerSum := sha256.Sum256(layer)
	diffID := "sha256:" + hex.EncodeToString(layerSum[:])

	config, err := imageConfig(spec, diffID)
	if err != nil {
		return "", err
	}
	configSum := sha256.Sum256(config)
	imageID := hex.EncodeToString(configSum[:])

	layerPath := hex.EncodeToString(layerSum[:]) + "/layer.tar"
	manifest, err := json.Marshal([]map[string]any{{
		"Config":   imageID + ".json",
		"RepoTags": []string{spec.Ref},
		"Layers":   []string{layerPath},
	}})
	if err != nil {
		return "", err
	}

	tw := tar.NewWriter(w)
	outer := []entry{
		{name: hex.EncodeToString(layerSum[:]), dir: true, mode: 0o755},
		{name: layerPath, mode: 0o644, data: layer},
		{name: imageID + ".json", mode: 0o644, data: config},
		{name: "manifest.json", mode: 0o644, data: manifest},
	}
	for _, e := range outer {
		if err := writeEntry(tw, e); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	return imageID, nil
}

// checkUser insists on a numeric uid:gid: the kubelet can only verify runAsNonRoot for numeric users.
func checkUser(s string) error {
	u, g, ok := strings.Cut(s, ":")
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	if !ok || err1 != nil || err2 != nil || uid < 0 || gid < 0 {
		return fmt.Errorf("-user %q: want numeric uid:gid such as 65532:65532", s)
	}
	return nil
}

// rootfs lists the layer's content: the minimal base plus the requested files, with every parent directory.
func rootfs(spec Spec) ([]entry, error) {
	byName := map[string]entry{}
	add := func(e entry) error {
		if old, ok := byName[e.name]; ok && !(old.dir && e.dir) {
			return fmt.Errorf("%s is added twice", "/"+e.name)
		}
		byName[e.name] = e
		// Parent directories first-come: explicit directories (such as /tmp's sticky bit) win.
		for dir := path.Dir(e.name); dir != "."; dir = path.Dir(dir) {
			if _, ok := byName[dir]; !ok {
				byName[dir] = entry{name: dir, dir: true, mode: 0o755}
			}
		}
		return nil
	}
	base := []entry{
		{name: "tmp", dir: true, mode: 0o1777},
		{name: "home/nonroot", dir: true, mode: 0o700, uid: 65532, gid: 65532},
		{name: "etc/passwd", mode: 0o644, data: []byte(
			"root:x:0:0:root:/root:/sbin/nologin\n" +
				"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\n")},
	}
	for _, e := range base {
		if err := add(e); err != nil {
			return nil, err
		}
	}
	if spec.CABundle != "" {
		data, err := os.ReadFile(spec.CABundle)
		if err != nil {
			return nil, fmt.Errorf("CA bundle: %w (install the ca-certificates package)", err)
		}
		if err := add(entry{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: data}); err != nil {
			return nil, err
		}
	}
	for _, f := range spec.Files {
		data, err := os.ReadFile(f.Src)
		if err != nil {
			return nil, err
		}
		mode := f.Mode
		if mode == 0 {
			st, err := os.Stat(f.Src)
			if err != nil {
				return nil, err
			}
			mode = st.Mode().Perm()
		}
		if err := add(entry{name: strings.TrimPrefix(path.Clean(f.Dest), "/"), mode: int64(mode), data: data}); err != nil {
			return nil, err
		}
	}
	if _, ok := byName[strings.TrimPrefix(spec.Entrypoint, "/")]; !ok {
		return nil, fmt.Errorf("entrypoint %s is not among the added files", spec.Entrypoint)
	}
	// Added files stay owned by root: the runtime user can read and run them but not replace them.
	out := make([]entry, 0, len(byName))
	for _, e := range byName {
		out = append(out, e)
	}
	// Sorted names put every directory before its content and make the order independent of map iteration.
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

func layerTar(entries []entry) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		if err := writeEntry(tw, e); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeEntry(tw *tar.Writer, e entry) error {
	h := &tar.Header{
		Name:    e.name,
		Mode:    e.mode,
		Uid:     e.uid,
		Gid:     e.gid,
		ModTime: epoch,
		Format:  tar.FormatPAX,
	}
	if e.dir {
		h.Typeflag = tar.TypeDir
		h.Name += "/"
	} else {
		h.Typeflag = tar.TypeReg
		h.Size = int64(len(e.data))
	}
	if err := tw.WriteHeader(h); err != nil {
		return fmt.Errorf("tar header for %s: %w", e.name, err)
	}
	_, err := tw.Write(e.data)
	return err
}

// imageConfig is the OCI/Docker image configuration: what the runtime needs to start the container.
func imageConfig(spec Spec, diffID string) ([]byte, error) {
	env := append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/home/nonroot"}, spec.Env...)
	created := epoch.Format(time.RFC3339)
	return json.Marshal(map[string]any{
		"architecture": spec.Arch,
		"os":           "linux",
		"created":      created,
		"config": map[string]any{
			"User":       spec.User,
			"Entrypoint": []string{spec.Entrypoint},
			"Env":        env,
			"WorkingDir": "/",
		},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{diffID}},
		"history": []map[string]any{{
			"created":    created,
			"created_by": "hack/imagetar",
		}},
	})
}
