package backup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	sigsjson "sigs.k8s.io/json"
)

// item is one item to back up: as a LIST page gave it — its JSON as the
// API server sent it, and the metadata a backup decides by — or as an
// object (from a GET, or returned by an action). A listed item's object is
// decoded only when something needs it (an action, a volume), and its JSON
// goes into the tarball as it came: decoding every item into maps and
// encoding it again was most of a backup's CPU.
type item struct {
	raw  []byte
	meta itemMeta
	obj  *unstructured.Unstructured
}

type itemMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
}

func objectItem(u *unstructured.Unstructured) *item { return &item{obj: u} }

// listedItem reads one item of a LIST page of apiVersion and kind (the
// list's, less "List"). Items of built-in lists come without their own
// apiVersion and kind, which a backup's items carry: they are put first.
func listedItem(raw []byte, apiVersion, kind string) (*item, error) {
	it := &item{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &it.meta); err != nil {
		return nil, err
	}
	switch {
	case it.meta.APIVersion != "" && it.meta.Kind != "":
		it.raw = raw
	case it.meta.APIVersion == "" && it.meta.Kind == "":
		it.raw = withType(raw, apiVersion, kind)
		it.meta.APIVersion, it.meta.Kind = apiVersion, kind
	default:
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(withType(raw, apiVersion, kind)); err != nil {
			return nil, err
		}
		it.obj = u
	}
	return it, nil
}

// withType puts apiVersion and kind at the head of a JSON object that has
// neither.
func withType(raw []byte, apiVersion, kind string) []byte {
	body := bytes.TrimSpace(raw)
	rest := bytes.TrimSpace(body[1:]) // after the '{'
	out := make([]byte, 0, len(body)+len(apiVersion)+len(kind)+32)
	out = append(out, `{"apiVersion":`...)
	out = strconv.AppendQuote(out, apiVersion)
	out = append(out, `,"kind":`...)
	out = strconv.AppendQuote(out, kind)
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}

func (it *item) name() string {
	if it.obj != nil {
		return it.obj.GetName()
	}
	return it.meta.Metadata.Name
}

func (it *item) namespace() string {
	if it.obj != nil {
		return it.obj.GetNamespace()
	}
	return it.meta.Metadata.Namespace
}

func (it *item) labels() map[string]string {
	if it.obj != nil {
		return it.obj.GetLabels()
	}
	return it.meta.Metadata.Labels
}

func (it *item) annotations() map[string]string {
	if it.obj != nil {
		return it.obj.GetAnnotations()
	}
	return it.meta.Metadata.Annotations
}

// object is the item decoded, on first need.
func (it *item) object() (*unstructured.Unstructured, error) {
	if it.obj == nil {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(it.raw); err != nil {
			return nil, err
		}
		it.obj = u
	}
	return it.obj, nil
}

// replace puts the JSON an action returned in the item's place: from then
// on the item is that object, kept as JSON like a listed one. It is checked
// as a decode would check it (a JSON object with a kind) without decoding
// more than the metadata.
func (it *item) replace(raw []byte) error {
	body := bytes.TrimSpace(raw)
	if len(body) == 0 || body[0] != '{' {
		return errors.New("it is not a JSON object")
	}
	var meta itemMeta
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(body, &meta); err != nil {
		return err
	}
	if meta.Kind == "" {
		return errors.New("it has no kind")
	}
	it.raw, it.meta, it.obj = body, meta, nil
	return nil
}

// json is the item as the tarball holds it.
func (it *item) json() ([]byte, error) {
	if it.raw != nil {
		return it.raw, nil
	}
	return json.Marshal(it.obj.Object)
}

// page is one page of a LIST, each item's JSON kept as it came.
type page struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Continue string `json:"continue"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

// listPage reads one page of a LIST of gvr in namespace ns ("" for all
// namespaces, or a cluster-scoped resource).
func listPage(ctx context.Context, c rest.Interface, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) (*page, error) {
	prefix := []string{"/apis", gvr.Group, gvr.Version}
	if gvr.Group == "" {
		prefix = []string{"/api", gvr.Version}
	}
	if ns != "" {
		prefix = append(prefix, "namespaces", ns)
	}
	req := c.Get().AbsPath(path.Join(append(prefix, gvr.Resource)...)).SetHeader("Accept", "application/json").
		Param("limit", strconv.FormatInt(opts.Limit, 10))
	if opts.Continue != "" {
		req = req.Param("continue", opts.Continue)
	}
	if opts.LabelSelector != "" {
		req = req.Param("labelSelector", opts.LabelSelector)
	}
	body, err := req.Do(ctx).Raw()
	if err != nil {
		return nil, withStatusMessage(err, body)
	}
	p := &page{}
	if err := json.Unmarshal(body, p); err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	return p, nil
}

// withStatusMessage gives err the API server's own message when the REST
// client could not read it (it says only "unknown" for a Status it did not
// decode, a LIST refused for want of a role among them), keeping its
// reason so apierrors.IsForbidden and the like still tell.
func withStatusMessage(err error, body []byte) error {
	var st metav1.Status
	if json.Unmarshal(body, &st) != nil || st.Kind != "Status" || st.Message == "" {
		return err
	}
	if s, ok := err.(apierrors.APIStatus); ok && s.Status().Message == st.Message {
		return err
	}
	return &apierrors.StatusError{ErrStatus: st}
}
