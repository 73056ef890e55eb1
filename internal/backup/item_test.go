package backup

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestListedItem(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		// want is the item's JSON as the tarball holds it, as a value.
		want           string
		ns, nm, label  string
		decodedAlready bool
		invalid        bool
	}{
		{name: "built-in item gets its type first", raw: `{"metadata":{"name":"a","namespace":"app","labels":{"l":"1"}},"data":{"k":"v"}}`,
			want: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"app","labels":{"l":"1"}},"data":{"k":"v"}}`,
			ns:   "app", nm: "a", label: "1"},
		{name: "custom resource keeps its own type", raw: `{"apiVersion":"example.io/v2","kind":"Widget","metadata":{"name":"w"}}`,
			want: `{"apiVersion":"example.io/v2","kind":"Widget","metadata":{"name":"w"}}`, nm: "w"},
		{name: "empty object", raw: ` { } `, want: `{"apiVersion":"v1","kind":"ConfigMap"}`},
		{name: "only a kind: decoded, the apiVersion filled", raw: `{"kind":"ConfigMap","metadata":{"name":"b"}}`,
			want: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}`, nm: "b", decodedAlready: true},
		{name: "large numbers stay exact", raw: `{"metadata":{"name":"n"},"spec":{"big":9007199254740993}}`,
			want: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"n"},"spec":{"big":9007199254740993}}`, nm: "n"},
		{name: "not an object", raw: `["a"]`, invalid: true},
		{name: "metadata of the wrong shape", raw: `{"metadata":{"name":3}}`, invalid: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it, err := listedItem([]byte(tc.raw), "v1", "ConfigMap")
			if tc.invalid {
				if err == nil {
					t.Fatalf("listedItem(%s) = %+v, want an error", tc.raw, it)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if it.namespace() != tc.ns || it.name() != tc.nm || it.labels()["l"] != tc.label || (it.obj != nil) != tc.decodedAlready {
				t.Errorf("namespace %q name %q labels %v decoded %v", it.namespace(), it.name(), it.labels(), it.obj != nil)
			}
			body, err := it.json()
			if err != nil {
				t.Fatal(err)
			}
			if !sameJSON(t, body, []byte(tc.want)) {
				t.Errorf("json %s, want %s", body, tc.want)
			}
			// The object decoded from it is the same item.
			obj, err := it.object()
			if err != nil || obj.GetKind() != "ConfigMap" && obj.GetKind() != "Widget" || obj.GetName() != tc.nm {
				t.Errorf("object %v, %v", obj, err)
			}
		})
	}
}

// TestReplacedItemIsTheActionsObject: once an action returns an object,
// the tarball gets that object, not the listed JSON, and what the backup
// decides by (labels, annotations) is read from it; what is not an object
// with a kind is refused and the item stays as it was.
func TestReplacedItemIsTheActionsObject(t *testing.T) {
	for _, tc := range []struct {
		name, returned, wantErr string
	}{
		{"annotated", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","annotations":{"by":"action"}}}`, ""},
		{"with spaces around", " \n{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\",\"annotations\":{\"by\":\"action\"}}}\n", ""},
		{"not an object", `["a"]`, "not a JSON object"},
		{"null", `null`, "not a JSON object"},
		{"no kind", `{"apiVersion":"v1","metadata":{"name":"a"}}`, "no kind"},
		{"broken", `{"apiVersion":"v1","kind":"ConfigMap",`, "unexpected end"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			listed := `{"metadata":{"name":"a"}}`
			it, err := listedItem([]byte(listed), "v1", "ConfigMap")
			if err != nil {
				t.Fatal(err)
			}
			err = it.replace([]byte(tc.returned))
			want := tc.returned
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("replace with %s: error %v, want one saying %q", tc.returned, err, tc.wantErr)
				}
				want = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`
			} else if err != nil {
				t.Fatal(err)
			}
			body, err := it.json()
			if err != nil {
				t.Fatal(err)
			}
			if !sameJSON(t, body, []byte(want)) {
				t.Errorf("json %s, want %s", body, want)
			}
			if got := it.annotations()["by"]; (got == "action") != (tc.wantErr == "") {
				t.Errorf("annotations %v", it.annotations())
			}
			if obj, err := it.object(); err != nil || obj.GetName() != "a" {
				t.Errorf("object %v, %v", obj, err)
			}
		})
	}
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	decode := func(data []byte) any {
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber() // numbers compared as written, not as float64
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		return v
	}
	return reflect.DeepEqual(decode(a), decode(b))
}
