package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func testSpec(t *testing.T) Spec {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "app")
	if err := os.WriteFile(bin, []byte("#!fake binary\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return Spec{
		Ref:        "deltakeeper.local/app:test",
		Entrypoint: "/usr/local/bin/app",
		User:       "65532:65532",
		CABundle:   ca,
		Arch:       "amd64",
		Env:        []string{"FOO=bar"},
		Files:      []File{{Src: bin, Dest: "/usr/local/bin/app"}},
	}
}

// readTar returns the headers and contents of a tar stream by name.
func readTar(t *testing.T, data []byte) (map[string]*tar.Header, map[string][]byte, []string) {
	t.Helper()
	headers, contents := map[string]*tar.Header{}, map[string][]byte{}
	var order []string
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		headers[h.Name], contents[h.Name] = h, b
		order = append(order, h.Name)
	}
	return headers, contents, order
}

func TestWrite_IsByteForByteReproducible(t *testing.T) {
	spec := testSpec(t)
	var a, b bytes.Buffer
	idA, err := Write(&a, spec)
	if err != nil {
		t.Fatal(err)
	}
	// A later mtime on the source must not change the image.
	later := epoch.AddDate(30, 0, 0)
	if err := os.Chtimes(spec.Files[0].Src, later, later); err != nil {
		t.Fatal(err)
	}
	idB, err := Write(&b, spec)
	if err != nil {
		t.Fatal(err)
	}
	if idA != idB || !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("two builds of the same spec differ: ids %s vs %s", idA, idB)
	}
}

func TestWrite_ProducesADockerArchiveThatContainerdCanImport(t *testing.T) {
	spec := testSpec(t)
	var buf bytes.Buffer
	id, err := Write(&buf, spec)
	if err != nil {
		t.Fatal(err)
	}
	_, files, _ := readTar(t, buf.Bytes())

	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	if len(manifest) != 1 || len(manifest[0].Layers) != 1 || manifest[0].RepoTags[0] != spec.Ref {
		t.Fatalf("manifest = %+v, want one image tagged %s with one layer", manifest, spec.Ref)
	}
	config := files[manifest[0].Config]
	if sum := sha256.Sum256(config); hex.EncodeToString(sum[:]) != id || manifest[0].Config != id+".json" {
		t.Fatalf("config %s is not named after its digest %s", manifest[0].Config, id)
	}
	var cfg struct {
		Architecture, OS string
		Config           struct {
			User       string
			Entrypoint []string
			Env        []string
		}
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		}
	}
	if err := json.Unmarshal(config, &cfg); err != nil {
		t.Fatal(err)
	}
	layer := files[manifest[0].Layers[0]]
	if sum := sha256.Sum256(layer); len(cfg.RootFS.DiffIDs) != 1 || cfg.RootFS.DiffIDs[0] != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Fatalf("diff_ids %v do not match the layer's digest", cfg.RootFS.DiffIDs)
	}
	if cfg.OS != "linux" || cfg.Architecture != "amd64" || cfg.Config.User != "65532:65532" ||
		strings.Join(cfg.Config.Entrypoint, " ") != "/usr/local/bin/app" {
		t.Fatalf("config = %+v", cfg)
	}
	if !strings.Contains(strings.Join(cfg.Config.Env, "\n"), "FOO=bar") {
		t.Fatalf("env %v lacks FOO=bar", cfg.Config.Env)
	}
}

func TestWrite_LayerIsAMinimalNonrootRootFilesystem(t *testing.T) {
	spec := testSpec(t)
	var buf bytes.Buffer
	if _, err := Write(&buf, spec); err != nil {
		t.Fatal(err)
	}
	_, files, _ := readTar(t, buf.Bytes())
	var layer []byte
	for name, data := range files {
		if strings.HasSuffix(name, "/layer.tar") {
			layer = data
		}
	}
	headers, contents, order := readTar(t, layer)

	for i := 1; i < len(order); i++ {
		if order[i-1] >= order[i] {
			t.Fatalf("layer entries not sorted: %q before %q", order[i-1], order[i])
		}
	}
	for name, h := range headers {
		if !h.ModTime.Equal(epoch) {
			t.Errorf("%s has mtime %v, want the fixed epoch", name, h.ModTime)
		}
	}
	want := map[string]int64{
		"usr/":                              0o755,
		"usr/local/bin/":                    0o755,
		"usr/local/bin/app":                 0o755,
		"tmp/":                              0o1777,
		"etc/passwd":                        0o644,
		"etc/group":                         0o644,
		"etc/ssl/certs/ca-certificates.crt": 0o644,
		"home/nonroot/":                     0o700,
	}
	for name, mode := range want {
		h, ok := headers[name]
		if !ok {
			t.Errorf("layer lacks %s", name)
			continue
		}
		if h.Mode != mode {
			t.Errorf("%s mode = %o, want %o", name, h.Mode, mode)
		}
	}
	if h := headers["home/nonroot/"]; h != nil && (h.Uid != 65532 || h.Gid != 65532) {
		t.Errorf("home/nonroot owned by %d:%d, want 65532:65532", h.Uid, h.Gid)
	}
	if h := headers["usr/local/bin/app"]; h != nil && (h.Uid != 0 || h.Gid != 0) {
		t.Errorf("the binary is owned by %d:%d, want root so the runtime user cannot replace it", h.Uid, h.Gid)
	}
	if !strings.Contains(string(contents["etc/passwd"]), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd lacks the nonroot user:\n%s", contents["etc/passwd"])
	}
	if !strings.Contains(string(contents["etc/group"]), "nonroot:x:65532:") {
		t.Errorf("/etc/group lacks the nonroot group:\n%s", contents["etc/group"])
	}
}

func TestWrite_RefusesAnEntrypointThatIsNotInTheImage(t *testing.T) {
	spec := testSpec(t)
	spec.Entrypoint = "/missing"
	if _, err := Write(io.Discard, spec); err == nil || !strings.Contains(err.Error(), "entrypoint /missing") {
		t.Fatalf("err = %v, want a complaint about the entrypoint", err)
	}
}

func TestWrite_RefusesANonNumericUser(t *testing.T) {
	spec := testSpec(t)
	spec.User = "nonroot"
	if _, err := Write(io.Discard, spec); err == nil || !strings.Contains(err.Error(), "numeric") {
		t.Fatalf("err = %v, want a complaint about the user", err)
	}
}

func TestParseAdd_ReadsOptionalOctalMode(t *testing.T) {
	f, err := parseAdd("bin/x:/x:0750")
	if err != nil || f.Src != "bin/x" || f.Dest != "/x" || f.Mode != 0o750 {
		t.Fatalf("parseAdd = %+v, %v", f, err)
	}
	for _, bad := range []string{"bin/x", "bin/x:relative", "bin/x:/x:9", ":/x"} {
		if _, err := parseAdd(bad); err == nil {
			t.Errorf("parseAdd(%q) accepted", bad)
		}
	}
}
