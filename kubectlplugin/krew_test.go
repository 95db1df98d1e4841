package kubectlplugin

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/deltakeeper/deltakeeper/internal/testutil"
)

// krewPlugin mirrors krew's v1alpha2 Plugin manifest (sigs.k8s.io/krew/pkg/index), decoded strictly so a
// misspelt field fails.
type krewPlugin struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Caveats          string `json:"caveats"`
		Platforms        []struct {
			Selector *metav1.LabelSelector `json:"selector"`
			URI      string                `json:"uri"`
			Sha256   string                `json:"sha256"`
			Files    []struct {
				From string `json:"from"`
				To   string `json:"to"`
			} `json:"files"`
			Bin string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

func TestKrewManifest_RendersWithTheArchivesChecksumsAndInstallsTheBinaryUnderThePluginName(t *testing.T) {
	root, err := testutil.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dist := t.TempDir()
	sums := map[string]string{}
	for _, platform := range []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64"} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "deltakeeper"), []byte("binary for "+platform), 0o755); err != nil {
			t.Fatal(err)
		}
		archive := filepath.Join(dist, "deltakeeper_v9.9.9_"+platform+".tar.gz")
		if out, err := exec.Command("tar", "-C", dir, "-czf", archive, "deltakeeper").CombinedOutput(); err != nil {
			t.Fatalf("tar: %v\n%s", err, out)
		}
		data, err := os.ReadFile(archive)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		sums[platform] = hex.EncodeToString(sum[:])
	}
	out, err := exec.Command(filepath.Join(root, "hack", "krew", "render.sh"), "v9.9.9", dist).Output()
	if err != nil {
		t.Fatalf("render.sh: %v", err)
	}
	if strings.Contains(string(out), "{{") {
		t.Fatalf("placeholders left:\n%s", out)
	}
	var p krewPlugin
	if err := yaml.UnmarshalStrict(out, &p); err != nil {
		t.Fatalf("the manifest does not decode as krew's Plugin: %v", err)
	}
	if p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || p.Kind != "Plugin" || p.Metadata.Name != "deltakeeper" ||
		p.Spec.Version != "v9.9.9" || p.Spec.ShortDescription == "" || p.Spec.Homepage == "" {
		t.Errorf("manifest header: %+v", p)
	}
	seen := map[string]bool{}
	for _, pl := range p.Spec.Platforms {
		platform := pl.Selector.MatchLabels["os"] + "_" + pl.Selector.MatchLabels["arch"]
		seen[platform] = true
		if pl.Sha256 != sums[platform] {
			t.Errorf("%s: sha256 %s, the archive's is %s", platform, pl.Sha256, sums[platform])
		}
		if !strings.HasSuffix(pl.URI, "/v9.9.9/deltakeeper_v9.9.9_"+platform+".tar.gz") {
			t.Errorf("%s: uri %s", platform, pl.URI)
		}
		if pl.Bin != PluginName || len(pl.Files) != 1 || pl.Files[0].From != "deltakeeper" || pl.Files[0].To != PluginName {
			t.Errorf("%s: krew must install the deltakeeper binary as %s: %+v", platform, PluginName, pl)
		}
	}
	if len(seen) != len(sums) {
		t.Errorf("platforms %v, want one per archive", seen)
	}

	// A missing archive fails the render instead of publishing a manifest without a checksum.
	if err := os.Remove(filepath.Join(dist, "deltakeeper_v9.9.9_darwin_arm64.tar.gz")); err != nil {
		t.Fatal(err)
	}
	if err := exec.Command(filepath.Join(root, "hack", "krew", "render.sh"), "v9.9.9", dist).Run(); err == nil {
		t.Error("render.sh succeeded without the darwin_arm64 archive")
	}
}
