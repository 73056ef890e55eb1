// Command salvor-plugin-copy is the entrypoint of Salvor's plugin images:
// run as an init container (`salvor install --plugins IMAGE`), it copies
// the plugin binaries the image holds into the volume the server reads
// plugins from. Plugin images have no shell or cp, so this is the copy.
//
//	salvor-plugin-copy [FROM [TO]]   (default /plugins /target)
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

func main() {
	from, to := "/plugins", "/target"
	if len(os.Args) > 1 {
		from = os.Args[1]
	}
	if len(os.Args) > 2 {
		to = os.Args[2]
	}
	n, err := copyAll(from, to)
	if err != nil {
		fmt.Fprintln(os.Stderr, "salvor-plugin-copy:", err)
		os.Exit(1)
	}
	fmt.Printf("copied %d plugin binaries from %s to %s\n", n, from, to)
}

// copyAll copies the regular files directly in from into to, executable.
func copyAll(from, to string) (int, error) {
	entries, err := os.ReadDir(from)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if err := copyFile(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			return n, err
		}
		fmt.Println(e.Name())
		n++
	}
	if n == 0 {
		return 0, fmt.Errorf("no plugin binaries in %s", from)
	}
	return n, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	// Written beside, not executable, and renamed once whole: the server
	// never starts half a binary, nor a leftover one.
	tmp := dst + ".partial"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copying %s: %w", src, err)
	}
	if err := out.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}
