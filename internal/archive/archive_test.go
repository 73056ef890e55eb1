package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	cm := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	dep := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	ns := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	for _, it := range []struct {
		gvr       schema.GroupVersionResource
		namespace string
		name      string
		body      string
	}{
		{cm, "app", "cfg", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","namespace":"app"}}`},
		{dep, "app", "web", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"app"}}`},
		{ns, "", "app", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"app"}}`},
	} {
		if err := w.WriteItem(it.gvr, it.namespace, it.name, []byte(it.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Items() != 3 {
		t.Errorf("Items() = %d", w.Items())
	}
	var paths []string
	version, err := Read(bytes.NewReader(buf.Bytes()), func(e Entry) error {
		paths = append(paths, e.Path+" "+e.Group+"|"+e.Resource+"|"+e.Version+"|"+e.Namespace+"|"+e.Name+"|"+e.Object.GetKind())
		return nil
	})
	if err != nil || version != "1.1.0" {
		t.Fatalf("Read: %q, %v", version, err)
	}
	want := []string{
		"resources/configmaps/namespaces/app/cfg.json |configmaps||app|cfg|ConfigMap",
		"resources/configmaps/v1-preferredversion/namespaces/app/cfg.json |configmaps|v1|app|cfg|ConfigMap",
		"resources/deployments.apps/namespaces/app/web.json apps|deployments||app|web|Deployment",
		"resources/deployments.apps/v1-preferredversion/namespaces/app/web.json apps|deployments|v1|app|web|Deployment",
		"resources/namespaces/cluster/app.json |namespaces|||app|Namespace",
		"resources/namespaces/v1-preferredversion/cluster/app.json |namespaces|v1||app|Namespace",
	}
	if strings.Join(paths, "\n") != strings.Join(want, "\n") {
		t.Errorf("entries:\n%s\nwant:\n%s", strings.Join(paths, "\n"), strings.Join(want, "\n"))
	}
}

type entry struct {
	hdr  tar.Header
	body string
}

func build(entries ...entry) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := e.hdr
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag == tar.TypeReg && h.Size == 0 {
			h.Size = int64(len(e.body))
		}
		h.Mode = 0o644
		_ = tw.WriteHeader(&h)
		_, _ = tw.Write([]byte(e.body))
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

var version = entry{tar.Header{Name: "metadata/version"}, "1.1.0\n"}

const cmJSON = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n"}}`

func TestMaliciousTarballs(t *testing.T) {
	for _, tc := range []struct {
		name string
		tar  []byte
		want string
	}{
		{"not gzip", []byte("hello"), "not gzip"},
		{"absolute path", build(version, entry{tar.Header{Name: "/etc/passwd"}, "x"}), "entry /etc/passwd has an absolute path"},
		{"dot dot", build(version, entry{tar.Header{Name: "resources/../../x.json"}, cmJSON}), "leaves the archive"},
		{"symlink", build(version, entry{tar.Header{Name: "resources/configmaps/namespaces/n/a.json", Typeflag: tar.TypeSymlink, Linkname: "/etc/shadow"}, ""}), "is not a regular file"},
		{"hard link", build(version, entry{tar.Header{Name: "resources/x", Typeflag: tar.TypeLink, Linkname: "metadata/version"}, ""}), "is not a regular file"},
		{"huge entry", build(version, entry{tar.Header{Name: "resources/configmaps/namespaces/n/a.json", Size: MaxEntrySize + 1}, ""}), "larger than"},
		{"bad JSON", build(version, entry{tar.Header{Name: "resources/configmaps/namespaces/n/a.json"}, "{not json"}), "entry resources/configmaps/namespaces/n/a.json is not valid JSON"},
		{"not an object", build(version, entry{tar.Header{Name: "resources/configmaps/namespaces/n/a.json"}, `{"x":1}`}), "is not a Kubernetes object"},
		{"unknown version", build(entry{tar.Header{Name: "metadata/version"}, "2.0.0\n"}), `format version "2.0.0"`},
		{"no version", build(entry{tar.Header{Name: "resources/configmaps/namespaces/n/a.json"}, cmJSON}), "no metadata/version entry"},
		{"bad layout", build(version, entry{tar.Header{Name: "resources/configmaps/weird/a.json"}, cmJSON}), "not under namespaces/<ns>/ or cluster/"},
		{"not json name", build(version, entry{tar.Header{Name: "resources/configmaps/namespaces/n/a.yaml"}, cmJSON}), "not a <name>.json file"},
		{"truncated", build(version, entry{tar.Header{Name: "resources/configmaps/namespaces/n/a.json"}, cmJSON})[:60], "invalid backup tarball"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			called := 0
			_, err := Read(bytes.NewReader(tc.tar), func(Entry) error { called++; return nil })
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Read: %v, want ErrInvalid saying %q", err, tc.want)
			}
		})
	}
}

func FuzzRead(f *testing.F) {
	f.Add(build(version, entry{tar.Header{Name: "resources/configmaps/namespaces/n/a.json"}, cmJSON}))
	f.Add(build(version, entry{tar.Header{Name: "resources/namespaces/v1-preferredversion/cluster/n.json"}, `{"kind":"Namespace","metadata":{"name":"n"}}`}))
	f.Add(build(version, entry{tar.Header{Name: "../x"}, "x"}))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := Read(bytes.NewReader(data), func(e Entry) error {
			if e.Object == nil || e.Name == "" || strings.Contains(e.Path, "..") || strings.HasPrefix(e.Path, "/") {
				t.Fatalf("accepted a bad entry: %+v", e)
			}
			return nil
		})
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("error not marked ErrInvalid: %v", err)
		}
	})
}
