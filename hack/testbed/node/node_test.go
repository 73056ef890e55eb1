package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestImageName(t *testing.T) {
	for image, want := range map[string]string{
		"salvor":                         "salvor",
		"ghcr.io/salvor-dev/salvor:v1.2": "salvor",
		"registry:5000/team/salvor@sha256:0123abcd": "salvor",
		"localhost:5000/busybox:1.36":               "busybox",
		"docker.io/library/busybox":                 "busybox",
	} {
		if got := imageName(image); got != want {
			t.Errorf("imageName(%q) = %q, want %q", image, got, want)
		}
	}
	c := &config{images: map[string]string{"salvor": "/bin/salvor", "ghcr.io/x/tool:1": "/bin/exact"}}
	for image, want := range map[string]string{"quay.io/a/salvor:2": "/bin/salvor", "ghcr.io/x/tool:1": "/bin/exact", "ghcr.io/x/tool:2": ""} {
		if got, _ := c.binary(image); got != want {
			t.Errorf("binary(%q) = %q, want %q", image, got, want)
		}
	}
}

// resolve keeps every mount point inside the container's root, however
// the links on the way point.
func TestResolveStaysInsideTheRoot(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"run", "usr/bin", "real"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{"var-run": "/run", "bin": "usr/bin", "up": "../../../..", "abs": "/real/../run"}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	for p, want := range map[string]string{
		"/var-run/secrets/token": "run/secrets/token",
		"/bin/sh":                "usr/bin/sh",
		"/up/etc/passwd":         "etc/passwd",
		"/abs/x":                 "run/x",
		"/../../etc":             "etc",
		"/real":                  "real",
	} {
		got, err := resolve(root, p)
		if err != nil {
			t.Fatalf("resolve(%s): %v", p, err)
		}
		if got != filepath.Join(root, want) {
			t.Errorf("resolve(%s) = %s, want ROOT/%s", p, got, want)
		}
	}
	if err := os.Symlink("loop", filepath.Join(root, "loop")); err != nil {
		t.Fatal(err)
	}
	if _, err := resolve(root, "/loop/x"); err == nil {
		t.Error("a link to itself resolved")
	}
}

// TestImageFiles: --image-file gives an image files at absolute paths,
// found by the image's name as its binary is.
func TestImageFiles(t *testing.T) {
	f := imageFiles{}
	for _, v := range []string{"plugins:/plugins/a=bin/a", "plugins:/plugins/../plugins/b=bin/b"} {
		if err := f.Set(v); err != nil {
			t.Fatalf("Set(%q): %v", v, err)
		}
	}
	for _, bad := range []string{"plugins:/plugins/a", "plugins=/bin/a", ":/x=y", "plugins:relative=bin/a", "plugins:/=bin/a", "plugins:/x="} {
		if err := f.Set(bad); err == nil {
			t.Errorf("Set(%q) was accepted", bad)
		}
	}
	c := &config{imageFiles: f}
	got := c.files("example.io/team/plugins:v3")
	if len(got) != 2 || got[0] != (mount{Source: "bin/a", Target: "/plugins/a", ReadOnly: true}) || got[1].Target != "/plugins/b" {
		t.Errorf("files of the plugins image: %+v", got)
	}
	if got := c.files("example.io/other:v1"); len(got) != 0 {
		t.Errorf("another image has files: %+v", got)
	}
}

// TestHostPathDir: a hostPath volume is under the node's root, however
// its path climbs, but for the directories given with --host-dir (and
// not their look-alike siblings), which pods reach as they are.
func TestHostPathDir(t *testing.T) {
	c := &config{root: "/node"}
	h := hostDirs{&c.hostDirs}
	if err := h.Set("/srv/store"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"srv", "/srv/store/", "/srv/../etc", "/"} {
		if err := h.Set(bad); err == nil {
			t.Errorf("--host-dir %q taken", bad)
		}
	}
	for path, want := range map[string]string{
		"/var/lib/kubelet/pods": "/node/var/lib/kubelet/pods",
		"/srv/store":            "/srv/store",
		"/srv/store/b/kopia":    "/srv/store/b/kopia",
		"/srv/store-other":      "/node/srv/store-other",
		"/srv/store/../../etc":  "/node/etc",
		"../../etc":             "/node/etc",
	} {
		if got := c.hostPathDir(path); got != want {
			t.Errorf("hostPathDir(%s) = %s, want %s", path, got, want)
		}
	}
}
