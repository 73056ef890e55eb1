// Command align holds the testbed's Go modules to one version of every
// module they share, so that a fresh machine compiles each shared package
// once: Go's build cache keys a package by its source and its whole
// dependency graph, so client-go built against another golang.org/x/net is
// compiled again, and two go builds running at once do not share work in
// flight (hack/testbed/build.sh orders them for that).
//
//   - The Kubernetes module (hack/testbed/kubernetes) requires Salvor's
//     versions of the modules both use; minimal version selection never
//     takes one below what Kubernetes itself requires.
//   - The testbed node and the CSI stack replace every module they share
//     with Kubernetes by the version Kubernetes is built with, but for the
//     CSI spec, whose newer calls they use.
//
// Run from the repository's root: `go run ./hack/testbed/align` rewrites
// the go.mod files (and runs go mod tidy), `-check` only says what differs
// and fails if anything does (make check-generated runs it).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// module is a Go module of the repository and the packages it builds.
type module struct {
	dir      string
	packages []string
}

var (
	salvor     = module{".", []string{"./cmd/salvor", "./examples/..."}}
	kubernetes = module{"hack/testbed/kubernetes", []string{"./kube-apiserver", "./kube-controller-manager", "./kube-scheduler"}}
	// followers are built after Kubernetes and take its versions.
	followers = []module{
		{"hack/testbed/node", []string{"."}},
		{"hack/testbed/csi-snapshotter", []string{"github.com/kubernetes-csi/external-snapshotter/v8/cmd/snapshot-controller", "github.com/kubernetes-csi/external-snapshotter/v8/cmd/csi-snapshotter"}},
		{"hack/testbed/csi-provisioner", []string{"github.com/kubernetes-csi/external-provisioner/v6/cmd/csi-provisioner"}},
	}
	// own are modules a follower keeps at its own version: the node and
	// the sidecars speak CSI calls Kubernetes' older spec lacks, and only
	// the kubelet's CSI client, which the testbed does not build, uses it
	// on Kubernetes' side.
	own = map[string]bool{"github.com/container-storage-interface/spec": true}
)

func main() {
	check := flag.Bool("check", false, "only report modules whose versions differ; exit 1 if any does")
	flag.Parse()
	if err := run(*check); err != nil {
		fmt.Fprintln(os.Stderr, "align:", err)
		os.Exit(1)
	}
}

// step holds a module to its leader's versions: by requiring them
// (-require) or by replacing the modules with them (-replace).
type step struct {
	m, leader module
	how       string
	keep      map[string]bool
}

func run(check bool) error {
	// Kubernetes follows Salvor, then the others follow Kubernetes.
	steps := []step{{kubernetes, salvor, "-require", nil}}
	for _, f := range followers {
		steps = append(steps, step{f, kubernetes, "-replace", own})
	}
	var differ []string
	for _, s := range steps {
		diffs, err := differences(s.m, s.leader, s.keep)
		if err != nil {
			return err
		}
		// go mod tidy can bring in modules that differ again: repeated
		// until nothing does.
		for i := 0; !check && len(diffs) > 0 && i < 5; i++ {
			if err := edit(s.m.dir, s.how, diffs); err != nil {
				return err
			}
			if diffs, err = differences(s.m, s.leader, s.keep); err != nil {
				return err
			}
		}
		for _, d := range diffs {
			differ = append(differ, fmt.Sprintf("%s: %s %s, want %s", s.m.dir, d.path, d.have, d.want))
		}
	}
	if len(differ) > 0 {
		if check {
			return fmt.Errorf("the testbed's modules are not built with the versions they share (run go run ./hack/testbed/align and commit the go.mod files):\n  %s", strings.Join(differ, "\n  "))
		}
		return fmt.Errorf("still differing after aligning (Salvor may require an older version than Kubernetes does):\n  %s", strings.Join(differ, "\n  "))
	}
	return nil
}

// diff is a module that m selects at another version (have) than its
// leader does (want).
type diff struct{ path, have, want string }

// differences are the modules in both m's and leader's builds that m
// selects at other versions than leader, but for those in keep.
func differences(m, leader module, keep map[string]bool) ([]diff, error) {
	mine, err := versions(m)
	if err != nil {
		return nil, err
	}
	theirs, err := versions(leader)
	if err != nil {
		return nil, err
	}
	return compare(mine, theirs, keep), nil
}

// compare lists, sorted by path, the modules of mine that theirs has at
// another version, but for those in keep.
func compare(mine, theirs map[string]string, keep map[string]bool) []diff {
	var diffs []diff
	for path, have := range mine {
		if want, ok := theirs[path]; ok && want != have && !keep[path] {
			diffs = append(diffs, diff{path, have, want})
		}
	}
	slices.SortFunc(diffs, func(a, b diff) int { return strings.Compare(a.path, b.path) })
	return diffs
}

// versions are the modules of the packages m builds, and the version of
// each that m selects (its replacement's, when replaced).
func versions(m module) (map[string]string, error) {
	args := append([]string{"list", "-deps", "-f", "{{with .Module}}{{.Path}} {{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}{{end}}"}, m.packages...)
	out, err := goCmd(m.dir, args...)
	if err != nil {
		return nil, err
	}
	v := map[string]string{}
	for line := range strings.Lines(out) {
		path, version, ok := strings.Cut(strings.TrimSpace(line), " ")
		// The main module and local replacements have no version.
		if ok && version != "" {
			v[path] = version
		}
	}
	return v, nil
}

// edit requires (-require) or replaces (-replace) each module at the
// version wanted, then tidies the module.
func edit(dir, how string, diffs []diff) error {
	args := []string{"mod", "edit"}
	for _, d := range diffs {
		if how == "-replace" {
			args = append(args, "-replace="+d.path+"="+d.path+"@"+d.want)
		} else {
			args = append(args, "-require="+d.path+"@"+d.want)
		}
	}
	if _, err := goCmd(dir, args...); err != nil {
		return err
	}
	_, err := goCmd(dir, "mod", "tidy")
	return err
}

func goCmd(dir string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s in %s: %v: %s", strings.Join(args, " "), filepath.Clean(dir), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}
