// Command image writes an OCI image of static binaries on an empty base,
// one per platform in one index, as an OCI layout tarball: Salvor's
// (`make image`) and its example plugins' (`make plugin-images`). See
// internal/ociimage.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/salvor-dev/salvor/internal/ociimage"
)

func main() {
	var out, entrypoint, created, version, revision, title string
	var cmdArgs []string
	files := map[string][]ociimage.File{}
	flag.StringVar(&out, "out", "bin/salvor-image.tar", "the OCI layout tarball to write")
	flag.StringVar(&entrypoint, "entrypoint", "/usr/local/bin/salvor", "the image's entrypoint")
	flag.Func("cmd", "an argument of the image's command (repeat)", func(v string) error { cmdArgs = append(cmdArgs, v); return nil })
	flag.StringVar(&title, "title", "salvor", "the image's title label")
	flag.StringVar(&created, "created", "", "the time of every timestamp in the image, RFC 3339 (the commit's)")
	flag.StringVar(&version, "version", "", "the image's version label")
	flag.StringVar(&revision, "revision", "", "the image's revision label (the commit)")
	flag.Func("file", "os/arch:/path/in/image=source, an executable of a platform (repeat)", func(v string) error {
		dst, src, ok := strings.Cut(v, "=")
		platform, path, ok2 := strings.Cut(dst, ":")
		if !ok || !ok2 {
			return fmt.Errorf("want os/arch:/path/in/image=source")
		}
		files[platform] = append(files[platform], ociimage.File{Path: path, Source: src})
		return nil
	})
	flag.Parse()
	t, err := time.Parse(time.RFC3339, created)
	if err != nil {
		fail(fmt.Errorf("--created %q: %w", created, err))
	}
	idx, err := ociimage.Build(ociimage.Spec{Files: files, Entrypoint: []string{entrypoint}, Cmd: cmdArgs, Created: t.UTC(), Labels: map[string]string{
		"org.opencontainers.image.title":    title,
		"org.opencontainers.image.source":   "https://github.com/salvor-dev/salvor",
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": revision,
	}})
	if err != nil {
		fail(err)
	}
	if err := ociimage.WriteLayoutTar(idx, out, version, t.UTC()); err != nil {
		fail(err)
	}
	d, err := idx.Digest()
	if err != nil {
		fail(err)
	}
	fmt.Printf("%s: %s\n", out, d)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "image:", err)
	os.Exit(1)
}
