package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// containerSpec is what `testbed-node run-container` sets up: the node
// writes it, then starts its own binary again in a new mount namespace to
// build the container's view of the filesystem and exec its process.
type containerSpec struct {
	Rootfs  string  `json:"rootfs"`  // an empty directory of the container's, on the host
	Scratch string  `json:"scratch"` // the container's own writable directory (its /tmp, overlay layers)
	Mounts  []mount `json:"mounts"`
	// Argv is the process: Argv[0] is looked up in the container (PATH
	// from Env) when Command is set; when it is not found there, or when
	// the pod gave no command, the image's binary (fd 3) runs with Argv.
	Argv    []string `json:"argv"`
	Command bool     `json:"command"`
	Image   bool     `json:"image"` // fd 3 is the image's binary
	// ImageName is the binary's name: it is mounted in the container at
	// imageDir/ImageName and runs from there, so a program that runs its
	// own executable again (os.Executable) finds it inside the container,
	// as in an image, wherever the binary lives on the host (a private
	// /tmp hides a checkout under /tmp).
	ImageName string `json:"imageName,omitempty"`
	// ImagePath is the binary on the host, bound at imageDir/ImageName
	// (fd 3 cannot be: it belongs to the node's mount namespace).
	ImagePath string   `json:"imagePath,omitempty"`
	Env       []string `json:"env"`
	Dir       string   `json:"dir"`
	// ReadOnlyRoot is the container's readOnlyRootFilesystem: without it
	// the root tmpfs stays writable, as a runtime's container layer is
	// (the host's directories in it are read-only either way).
	ReadOnlyRoot bool   `json:"readOnlyRoot,omitempty"`
	UID          *int64 `json:"uid,omitempty"`
	GID          *int64 `json:"gid,omitempty"`
}

type mount struct {
	Source   string `json:"source"` // a host path
	Target   string `json:"target"` // the path the container sees
	ReadOnly bool   `json:"readOnly"`
	// Slave lets mounts made on the host below Source after the container
	// started show in it (mountPropagation: HostToContainer).
	Slave bool `json:"slave,omitempty"`
}

// setupFailed is the exit code of a container whose filesystem could not
// be set up (the message is on its log), as a runtime's 128.
const setupFailed = 128

// runContainer is the child's side: it never returns.
func runContainer(specPath string) {
	b, err := os.ReadFile(specPath)
	if err != nil {
		fail("reading the container spec: %v", err)
	}
	var s containerSpec
	if err := json.Unmarshal(b, &s); err != nil {
		fail("decoding the container spec %s: %v", specPath, err)
	}
	if err := s.setUp(); err != nil {
		fail("setting up the container's filesystem: %v", err)
	}
	path := filepath.Join(imageDir, s.ImageName)
	if s.Command || !s.Image {
		p, err := lookPath(s.Argv[0], s.Env)
		switch {
		case err == nil:
			path = p
		case !s.Image:
			fail("%s: %v (and the image maps to no binary on this node)", s.Argv[0], err)
		}
	}
	err = syscall.Exec(path, s.Argv, s.Env)
	fail("running %s: %v", s.Argv[0], err)
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "testbed-node: "+format+"\n", args...)
	os.Exit(setupFailed)
}

func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		if _, err := os.Stat(name); err != nil {
			return "", err
		}
		return name, nil
	}
	path := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// setUp builds the container's root: a tmpfs holding the host's top-level
// directories bind-mounted read-only (an overlay where a mount point must
// be made inside one, so the host is never written), a private /tmp, and
// the pod's volumes at their mount paths, the tmpfs itself read-only only
// when the container asks; then chroots into it.
func (s *containerSpec) setUp() error {
	// Slaves, not private: mounts the node makes later under its shared
	// kubelet directory (a CSI volume published for another pod) still
	// reach a container whose volume asks for them (HostToContainer);
	// each bind below is made private unless it asks. Nothing made here
	// goes back to the node.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("making mounts slaves: %w", err)
	}
	root := s.Rootfs
	if err := unix.Mount("tmpfs", root, "tmpfs", 0, "mode=755"); err != nil {
		return fmt.Errorf("mounting the root tmpfs on %s: %w", root, err)
	}
	entries, err := os.ReadDir("/")
	if err != nil {
		return err
	}
	host := map[string]bool{} // top-level names bound from the host
	for _, e := range entries {
		name := e.Name()
		src, dst := "/"+name, filepath.Join(root, name)
		fi, err := os.Lstat(src)
		if err != nil {
			continue
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(src)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, dst); err != nil {
				return err
			}
			continue
		case fi.IsDir():
			if err := os.Mkdir(dst, fi.Mode().Perm()); err != nil {
				return err
			}
		default:
			continue // top-level files (a .dockerenv) are not a container's business
		}
		if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("binding %s: %w", src, err)
		}
		if err := unix.Mount("", dst, "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return fmt.Errorf("making %s private: %w", dst, err)
		}
		host[name] = true
	}
	if s.Image {
		if err := s.mountImage(root); err != nil {
			return err
		}
	}
	mounts := append([]mount(nil), s.Mounts...)
	sort.SliceStable(mounts, func(i, j int) bool { return depth(mounts[i].Target) < depth(mounts[j].Target) })
	// Mount points outside every volume are made now, while the host's
	// directories can still be overlaid; those inside a volume are made in
	// it, as a runtime does, once it is mounted.
	overlaid := map[string]bool{}
	for i, m := range mounts {
		if inVolume(mounts[:i], m.Target) {
			continue
		}
		p, err := resolve(root, m.Target)
		if err != nil {
			return fmt.Errorf("mount path %s: %w", m.Target, err)
		}
		if exists(p) {
			continue
		}
		top := strings.SplitN(strings.TrimPrefix(p, root+"/"), "/", 2)[0]
		if host[top] && !overlaid[top] {
			if err := s.overlay(root, top); err != nil {
				return err
			}
			overlaid[top] = true
		}
		if err := makeMountPoint(p, m.Source); err != nil {
			return fmt.Errorf("making mount point %s: %w", m.Target, err)
		}
	}
	for name := range host {
		if name == "dev" || name == "proc" {
			continue // device nodes and the kernel's own files, as a runtime gives them
		}
		if err := readOnly(filepath.Join(root, name)); err != nil {
			return fmt.Errorf("making /%s read-only: %w", name, err)
		}
	}
	tmp := filepath.Join(s.Scratch, "tmp")
	if err := os.MkdirAll(tmp, 0o1777); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o1777); err != nil {
		return err
	}
	if !exists(filepath.Join(root, "tmp")) {
		if err := os.Mkdir(filepath.Join(root, "tmp"), 0o1777); err != nil {
			return err
		}
	}
	if err := unix.Mount(tmp, filepath.Join(root, "tmp"), "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("binding the private /tmp: %w", err)
	}
	for _, m := range mounts {
		p, err := resolve(root, m.Target)
		if err != nil {
			return fmt.Errorf("mount path %s: %w", m.Target, err)
		}
		if !exists(p) {
			if err := makeMountPoint(p, m.Source); err != nil {
				return fmt.Errorf("making mount point %s in its volume: %w", m.Target, err)
			}
		}
		if err := unix.Mount(m.Source, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("mounting %s at %s: %w", m.Source, m.Target, err)
		}
		propagation, what := uintptr(unix.MS_PRIVATE), "private"
		if m.Slave {
			propagation, what = unix.MS_SLAVE, "a slave mount"
		}
		if err := unix.Mount("", p, "", unix.MS_REC|propagation, ""); err != nil {
			return fmt.Errorf("making %s %s: %w", m.Target, what, err)
		}
		if m.ReadOnly {
			if err := readOnly(p); err != nil {
				return fmt.Errorf("making %s read-only: %w", m.Target, err)
			}
		}
	}
	if s.ReadOnlyRoot {
		if err := unix.Mount("", root, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("making the root read-only: %w", err)
		}
	}
	if err := unix.Chroot(root); err != nil {
		return fmt.Errorf("chroot %s: %w", root, err)
	}
	dir := s.Dir
	if dir == "" {
		dir = "/"
	}
	if err := os.Chdir(dir); err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	if s.GID != nil {
		if err := syscall.Setgroups(nil); err != nil {
			return err
		}
		if err := syscall.Setgid(int(*s.GID)); err != nil {
			return fmt.Errorf("runAsGroup %d: %w", *s.GID, err)
		}
	}
	if s.UID != nil {
		if err := syscall.Setuid(int(*s.UID)); err != nil {
			return fmt.Errorf("runAsUser %d: %w", *s.UID, err)
		}
	}
	return nil
}

// overlay replaces the bind of the host's /top with an overlay whose
// writable layer is the container's own, so mount points can be made in
// it without touching the host.
func (s *containerSpec) overlay(root, top string) error {
	layers := filepath.Join(s.Scratch, "overlay")
	if err := os.MkdirAll(layers, 0o700); err != nil {
		return err
	}
	if !exists(filepath.Join(layers, ".tmpfs")) {
		// The layers sit on a file system of their own, so they never
		// overlap the directory they overlay.
		if err := unix.Mount("tmpfs", layers, "tmpfs", 0, "mode=700"); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(layers, ".tmpfs"), nil, 0o600); err != nil {
			return err
		}
	}
	upper, work := filepath.Join(layers, top, "upper"), filepath.Join(layers, top, "work")
	for _, d := range []string{upper, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	dst := filepath.Join(root, top)
	if err := unix.Unmount(dst, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("unbinding /%s: %w", top, err)
	}
	opts := fmt.Sprintf("lowerdir=/%s,upperdir=%s,workdir=%s", top, upper, work)
	if err := unix.Mount("overlay", dst, "overlay", 0, opts); err != nil {
		return fmt.Errorf("overlaying /%s: %w", top, err)
	}
	return nil
}

func readOnly(p string) error {
	return unix.MountSetattr(-1, p, unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
}

func makeMountPoint(p, source string) error {
	fi, err := os.Stat(source)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return os.MkdirAll(p, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

func depth(p string) int { return strings.Count(filepath.Clean(p), "/") }

func inVolume(mounts []mount, target string) bool {
	for _, m := range mounts {
		if strings.HasPrefix(filepath.Clean(target)+"/", filepath.Clean(m.Target)+"/") {
			return true
		}
	}
	return false
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// resolve is p inside root with every symbolic link on the way followed
// as the container would (an absolute link's target is taken under root),
// so a mount point is never made outside the container's root. The
// components from the first missing one on are kept as written.
func resolve(root, p string) (string, error) {
	parts := strings.Split(strings.Trim(filepath.Clean("/"+p), "/"), "/")
	cur := root
	for links := 0; len(parts) > 0; {
		part := parts[0]
		parts = parts[1:]
		if part == "" || part == "." {
			continue
		}
		if part == ".." {
			if cur != root {
				cur = filepath.Dir(cur)
			}
			continue
		}
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		if errors.Is(err, os.ErrNotExist) {
			return filepath.Join(append([]string{next}, parts...)...), nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > 40 {
			return "", fmt.Errorf("too many symbolic links under %s", p)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			cur = root
		}
		parts = append(strings.Split(strings.Trim(target, "/"), "/"), parts...)
	}
	return cur, nil
}

// imageDir is where a container finds its image's binary.
const imageDir = "/testbed-image"

// mountImage binds the image's binary at imageDir in the container's
// root.
func (s *containerSpec) mountImage(root string) error {
	if s.ImageName == "" || strings.Contains(s.ImageName, "/") {
		return fmt.Errorf("the image's binary has no usable name (%q)", s.ImageName)
	}
	dir := filepath.Join(root, imageDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	target := filepath.Join(dir, s.ImageName)
	if err := os.WriteFile(target, nil, 0o755); err != nil {
		return err
	}
	if err := unix.Mount(s.ImagePath, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("binding the image's binary at %s: %w", filepath.Join(imageDir, s.ImageName), err)
	}
	return readOnly(target)
}
