package ociimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// NonRoot is the user and group the images run as (the conventional
// "nonroot" of distroless images; no passwd entry is needed).
const NonRoot = "65532:65532"

// File is an executable put into an image.
type File struct {
	// Path is where it goes, e.g. /usr/local/bin/salvor.
	Path string
	// Source is the file to read.
	Source string
}

// Spec says what goes into an image.
type Spec struct {
	// Files are the executables of each platform ("linux/amd64").
	Files map[string][]File
	// Entrypoint and Cmd of the image's config.
	Entrypoint, Cmd []string
	// Created is the time every timestamp in the image takes: the commit's.
	Created time.Time
	// Labels go into the config (org.opencontainers.image.*).
	Labels map[string]string
}

// Build returns the index of one image per platform.
func Build(s Spec) (v1.ImageIndex, error) {
	if len(s.Files) == 0 || len(s.Entrypoint) == 0 {
		return nil, fmt.Errorf("an image needs files and an entrypoint")
	}
	platforms := make([]string, 0, len(s.Files))
	for p := range s.Files {
		platforms = append(platforms, p)
	}
	sort.Strings(platforms)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		os, arch, ok := strings.Cut(p, "/")
		if !ok {
			return nil, fmt.Errorf("platform %q: want os/arch", p)
		}
		img, err := image(s, s.Files[p], os, arch)
		if err != nil {
			return nil, fmt.Errorf("image for %s: %w", p, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: os, Architecture: arch}}})
	}
	return idx, nil
}

func image(s Spec, files []File, osName, arch string) (v1.Image, error) {
	layerTar, err := layerOf(files, s.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: s.Created}, CreatedBy: "salvor ociimage: " + strings.Join(s.Entrypoint, " ")}})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = osName, arch
	cfg.Created = v1.Time{Time: s.Created}
	cfg.Config.Entrypoint, cfg.Config.Cmd = s.Entrypoint, s.Cmd
	cfg.Config.User = NonRoot
	cfg.Config.WorkingDir = "/"
	cfg.Config.Env = []string{"PATH=/usr/local/bin", "HOME=/tmp"}
	cfg.Config.Labels = s.Labels
	return mutate.ConfigFile(img, cfg)
}

// layerOf is a tar of the files, executable, with their parent
// directories and a world-writable /tmp, every header fixed (owner root,
// the given time), so the bytes depend on the files alone.
func layerOf(files []File, mtime time.Time) ([]byte, error) {
	sorted := append([]File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	dirs := map[string]bool{"tmp": true}
	for _, f := range sorted {
		parts := strings.Split(strings.Trim(filepath.ToSlash(filepath.Dir(f.Path)), "/"), "/")
		for i := range parts {
			if d := strings.Join(parts[:i+1], "/"); d != "" {
				dirs[d] = true
			}
		}
	}
	dirList := make([]string, 0, len(dirs))
	for d := range dirs {
		dirList = append(dirList, d)
	}
	sort.Strings(dirList)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range dirList {
		mode := int64(0o755)
		if d == "tmp" {
			// HOME, and where a server without a mounted scratch volume spools.
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: mode, ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	for _, f := range sorted {
		data, err := os.ReadFile(f.Source)
		if err != nil {
			return nil, err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(f.Path, "/"), Mode: 0o755, Size: int64(len(data)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteLayoutTar writes the index as an OCI image layout in a tar file (an
// "oci-archive", as skopeo calls it), every entry's time fixed. The
// layout's index.json holds one entry, the multi-platform index, named ref
// (org.opencontainers.image.ref.name), as tools that copy a layout expect.
func WriteLayoutTar(idx v1.ImageIndex, out, ref string, mtime time.Time) error {
	dir, err := os.MkdirTemp("", "salvor-oci-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	lp, err := layout.Write(dir, mutate.IndexMediaType(empty.Index, types.OCIImageIndex))
	if err != nil {
		return err
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref})); err != nil {
		return err
	}
	var files []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		files = append(files, p)
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(files)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	for _, p := range files {
		rel, _ := filepath.Rel(dir, p)
		info, err := os.Stat(p)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: mtime, Format: tar.FormatPAX, Mode: 0o644}
		if info.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			continue
		}
		h.Typeflag, h.Size = tar.TypeReg, info.Size()
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}
