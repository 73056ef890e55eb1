package ociimage

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/salvor-dev/salvor/internal/testbin"
)

// build cross-compiles salvor as `make image` does.
func build(t *testing.T, dir, osName, arch string) string {
	t.Helper()
	root, err := testbin.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "salvor-"+osName+"-"+arch)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", // as make cross and make image: one build cache
		"-s -w -X github.com/salvor-dev/salvor/internal/buildinfo.version=v0.0.0-imagetest", "-o", out, "./cmd/salvor")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS="+osName, "GOARCH="+arch, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building salvor for %s/%s: %v\n%s", osName, arch, err, b)
	}
	return out
}

func TestImageIsReproducibleNonRootAndRuns(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("runs the image's linux binary")
	}
	dir := t.TempDir()
	created := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	spec := Spec{
		Binaries: map[string]string{"linux/amd64": build(t, dir, "linux", "amd64"), "linux/arm64": build(t, dir, "linux", "arm64")},
		Path:     "/usr/local/bin/salvor", Created: created, Labels: map[string]string{"org.opencontainers.image.title": "salvor"},
	}
	var digests []v1.Hash
	var sums [][32]byte
	for i := 0; i < 2; i++ {
		idx, err := Build(spec)
		if err != nil {
			t.Fatal(err)
		}
		d, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "image.tar")
		if err := WriteLayoutTar(idx, out, "v0.0.0-imagetest", created); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		digests, sums = append(digests, d), append(sums, sha256.Sum256(b))
	}
	if digests[0] != digests[1] || sums[0] != sums[1] {
		t.Fatalf("two builds from the same binaries differ: %s %s", digests[0], digests[1])
	}

	// Read the tarball back as an OCI layout: the index and its images.
	layoutDir := filepath.Join(dir, "layout")
	untar(t, filepath.Join(dir, "image.tar"), layoutDir)
	lp, err := layout.ImageIndexFromPath(layoutDir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := lp.IndexManifest()
	if err != nil || len(top.Manifests) != 1 || top.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "v0.0.0-imagetest" {
		t.Fatalf("layout index: %v %+v", err, top)
	}
	idx, err := lp.ImageIndex(top.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := idx.Digest(); d != digests[0] {
		t.Errorf("the written index is %s, the built one %s", d, digests[0])
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, desc := range m.Manifests {
		platforms = append(platforms, desc.Platform.OS+"/"+desc.Platform.Architecture)
		img, err := idx.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Config.User != NonRoot || strings.Join(cfg.Config.Entrypoint, " ") != "/usr/local/bin/salvor" ||
			cfg.OS != desc.Platform.OS || cfg.Architecture != desc.Platform.Architecture || !cfg.Created.Time.Equal(created) {
			t.Errorf("%s config: user %q, entrypoint %v, %s/%s, created %s", desc.Platform.Architecture, cfg.Config.User, cfg.Config.Entrypoint, cfg.OS, cfg.Architecture, cfg.Created)
		}
		if desc.Platform.Architecture != runtime.GOARCH {
			continue
		}
		// The binary taken out of the layer runs.
		layers, err := img.Layers()
		if err != nil || len(layers) != 1 {
			t.Fatalf("layers: %v %d", err, len(layers))
		}
		rc, err := layers[0].Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		bin := extract(t, rc, "usr/local/bin/salvor", dir)
		out, err := exec.Command(bin, "version", "--client-only").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "v0.0.0-imagetest") {
			t.Errorf("salvor from the image: %v\n%s", err, out)
		}
	}
	if strings.Join(platforms, ",") != "linux/amd64,linux/arm64" {
		t.Errorf("platforms %v", platforms)
	}
}

func extract(t *testing.T, r io.Reader, name, dir string) string {
	t.Helper()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s not in the layer: %v", name, err)
		}
		if h.Name != name {
			continue
		}
		if h.Mode&0o111 == 0 || h.Uid != 0 {
			t.Errorf("%s: mode %o uid %d", name, h.Mode, h.Uid)
		}
		var buf bytes.Buffer
		if _, err := io.Copy(&buf, tr); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "extracted-salvor")
		if err := os.WriteFile(out, buf.Bytes(), 0o755); err != nil {
			t.Fatal(err)
		}
		return out
	}
}

func untar(t *testing.T, file, dir string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
