// Command image writes Salvor's OCI image (`make image`): the static
// binaries built for each platform, on an empty base, as an OCI layout
// tarball. See internal/ociimage.
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
	var out, path, created, version, revision string
	binaries := map[string]string{}
	flag.StringVar(&out, "out", "bin/salvor-image.tar", "the OCI layout tarball to write")
	flag.StringVar(&path, "path", "/usr/local/bin/salvor", "where the binary goes in the image")
	flag.StringVar(&created, "created", "", "the time of every timestamp in the image, RFC 3339 (the commit's)")
	flag.StringVar(&version, "version", "", "the image's version label")
	flag.StringVar(&revision, "revision", "", "the image's revision label (the commit)")
	flag.Func("binary", "os/arch=path of a platform's binary (repeat)", func(v string) error {
		p, b, ok := strings.Cut(v, "=")
		if !ok {
			return fmt.Errorf("want os/arch=path")
		}
		binaries[p] = b
		return nil
	})
	flag.Parse()
	t, err := time.Parse(time.RFC3339, created)
	if err != nil {
		fail(fmt.Errorf("--created %q: %w", created, err))
	}
	idx, err := ociimage.Build(ociimage.Spec{Binaries: binaries, Path: path, Created: t.UTC(), Labels: map[string]string{
		"org.opencontainers.image.title":    "salvor",
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
