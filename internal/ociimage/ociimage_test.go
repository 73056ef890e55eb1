package ociimage

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/salvor-dev/salvor/internal/testbin"
)

// The binaries the tests put in images, built once for both in TestMain
// by testbin (linked in bin/testbin, again only when out of date) with
// go's default settings, as every test's builds are: the images'
// packaging is what is under test, and the release builds' static,
// -trimpath settings would compile every package they import once more. -s -w as make image's: smaller binaries, less to compress. The
// version salvor says is the image's label, v0.0.0-imagetest.
var bins struct {
	native string // hack/image, salvor, salvor-plugin-copy, backup-action for this machine
	other  string // salvor-plugin-copy for linux/otherArch, only packaged
}

// otherArch is the image platform this machine does not run.
var otherArch = map[string]string{"amd64": "arm64"}[runtime.GOARCH]

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "ociimage-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		if otherArch == "" {
			otherArch = "amd64"
		}
		bins.native, bins.other = filepath.Join(dir, "native"), filepath.Join(dir, "other")
		opt := testbin.Options{GOOS: "linux", GOARCH: runtime.GOARCH, LDFlags: "-s -w -X github.com/salvor-dev/salvor/internal/buildinfo.version=v0.0.0-imagetest"}
		if err := testbin.BuildAllWith(bins.native, opt, "./hack/image", "./cmd/salvor", "./cmd/salvor-plugin-copy", "./examples/backup-action"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		opt.GOARCH = otherArch
		if err := testbin.BuildAllWith(bins.other, opt, "./cmd/salvor-plugin-copy"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}())
}

// hackImage runs hack/image, as make image and make plugin-images do, and
// returns the digest it printed.
func hackImage(t *testing.T, args ...string) string {
	t.Helper()
	printed, err := exec.Command(filepath.Join(bins.native, "image"), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("hack/image: %v\n%s", err, printed)
	}
	_, digest, _ := strings.Cut(strings.TrimSpace(string(printed)), ": ")
	return digest
}

// TestImageIsReproducibleNonRootAndRuns builds salvor's image as `make
// image` does — hack/image over binaries cross-built for each platform —
// twice, and reads it back: the same bytes both times, a non-root image
// per platform, whose salvor runs.
func TestImageIsReproducibleNonRootAndRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	created := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	salvor := filepath.Join(bins.native, "salvor")
	args := []string{"--created", created.Format(time.RFC3339), "--version", "v0.0.0-imagetest", "--revision", "0123abc", "--entrypoint", "/usr/local/bin/salvor",
		"--file", "linux/" + runtime.GOARCH + ":/usr/local/bin/salvor=" + salvor,
		// Only this machine's architecture is run; the other is only
		// packaged, and a small program stands in for salvor there, whose
		// cold cross build costs CI minutes.
		"--file", "linux/" + otherArch + ":/usr/local/bin/salvor=" + filepath.Join(bins.other, "salvor-plugin-copy")}
	var digests []string
	var sums [][32]byte
	for i := range 2 {
		out := filepath.Join(dir, fmt.Sprintf("image-%d.tar", i))
		digests = append(digests, hackImage(t, append(args, "--out", out)...))
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, sha256.Sum256(b))
	}
	if digests[0] != digests[1] || sums[0] != sums[1] {
		t.Fatalf("two builds from the same binaries differ: %s %s", digests[0], digests[1])
	}

	// Read the tarball back as an OCI layout: the index and its images.
	layoutDir := filepath.Join(dir, "layout")
	untar(t, filepath.Join(dir, "image-0.tar"), layoutDir)
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
	if d, _ := idx.Digest(); d.String() != digests[0] {
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
		if cfg.Config.User != NonRoot || strings.Join(cfg.Config.Entrypoint, " ") != "/usr/local/bin/salvor" || cfg.Config.Labels["org.opencontainers.image.revision"] != "0123abc" ||
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

// TestPluginImageCopiesItsPlugin builds an example plugin's image as `make
// plugin-images` does, and runs its entrypoint as `salvor install`'s init
// container would: the plugin lands in the target, and serves.
func TestPluginImageCopiesItsPlugin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	platform := "linux/" + runtime.GOARCH
	idx, err := Build(Spec{
		Files: map[string][]File{platform: {
			{Path: "/usr/local/bin/salvor-plugin-copy", Source: filepath.Join(bins.native, "salvor-plugin-copy")},
			{Path: "/plugins/backup-action", Source: filepath.Join(bins.native, "backup-action")},
		}},
		Entrypoint: []string{"/usr/local/bin/salvor-plugin-copy"}, Created: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC),
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil || len(m.Manifests) != 1 {
		t.Fatalf("%v %+v", err, m)
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil || cfg.Config.User != NonRoot {
		t.Fatalf("config: %v %+v", err, cfg)
	}
	layers, _ := img.Layers()
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "root")
	untarReader(t, rc, root)
	target := filepath.Join(dir, "target")
	if err := os.MkdirAll(target, 0o755); err != nil {
		t.Fatal(err)
	}
	entry := filepath.Join(root, filepath.FromSlash(cfg.Config.Entrypoint[0]))
	if out, err := exec.Command(entry, filepath.Join(root, "plugins"), target).CombinedOutput(); err != nil || !strings.Contains(string(out), "copied 1 plugin binaries") {
		t.Fatalf("the image's entrypoint: %v\n%s", err, out)
	}
	salvor := filepath.Join(bins.native, "salvor")
	out, err := exec.Command(salvor, "plugin", "list", "--plugin-dir", target).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "backup-action") {
		t.Errorf("plugins in the target: %v\n%s", err, out)
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
	untarReader(t, f, dir)
}

// untarReader unpacks a tar of directories and files (modes kept).
func untarReader(t *testing.T, r io.Reader, dir string) {
	t.Helper()
	tr := tar.NewReader(r)
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
		if err := os.WriteFile(p, b, os.FileMode(h.Mode)&0o777); err != nil {
			t.Fatal(err)
		}
	}
}
