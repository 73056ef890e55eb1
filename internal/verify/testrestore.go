package verify

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/archive"
	"github.com/salvor-dev/salvor/internal/persistence"
	"github.com/salvor-dev/salvor/internal/restore"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// Targets maps each namespace the backup holds items of (as its resource
// list names them) to the namespace a test restore puts it in,
// <prefix>-<namespace>. A name that is not a valid namespace name is an
// error naming it.
func Targets(list map[string][]string, prefix string) (map[string]string, error) {
	if errs := validation.IsDNS1123Label(prefix); len(errs) > 0 {
		return nil, fmt.Errorf("restore-into prefix %q: %s", prefix, strings.Join(errs, "; "))
	}
	out := map[string]string{}
	for ns := range persistence.ListedNamespaces(list) {
		target := prefix + "-" + ns
		if errs := validation.IsDNS1123Label(target); len(errs) > 0 {
			return nil, fmt.Errorf("namespace %s would be test-restored as %q, which is not a namespace name: %s; choose a shorter prefix", ns, target, strings.Join(errs, "; "))
		}
		out[ns] = target
	}
	return out, nil
}

// Comparison is what comparing a test restore with its backup found.
type Comparison struct {
	Compared, Identical, NotRestored int
	Differing                        []string
	// Neutralized says what the test restore changed or left out to make
	// its copies inert (restore.Inert), item by item (at most 50 lines).
	Neutralized []string
	neutralized int
}

// Compare reads the backup's tarball and compares every namespaced item of
// the mapped namespaces, adjusted as the restore adjusts it (namespaces,
// storage classes, images), with the object the test restore made of it in its
// target namespace: the API server says, by a server-side apply dry
// run, whether restoring the item again would change anything (so fields
// it owns or assigns — UIDs, versions, a Service's IP — do not count).
// Items the restore left out (by its rules) are counted, not compared.
func Compare(ctx context.Context, dyn dynamic.Interface, tarball io.Reader, backupName, restoreName string, mapping map[string]string, mappings *restore.Mappings) (*Comparison, error) {
	c := &Comparison{}
	_, err := archive.Read(tarball, func(e archive.Entry) error {
		target, ok := mapping[e.Namespace]
		if e.Version != "" || e.Namespace == "" || !ok {
			return nil
		}
		gv, err := schema.ParseGroupVersion(e.Object.GetAPIVersion())
		if err != nil || gv.Group != e.Group {
			return nil
		}
		what := fmt.Sprintf("%s %s/%s", schema.GroupResource{Group: e.Group, Resource: e.Resource}, target, e.Name)
		ri := dyn.Resource(gv.WithResource(e.Resource)).Namespace(target)
		live, err := ri.Get(ctx, e.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			if changed, drop := restore.Inert(schema.GroupResource{Group: e.Group, Resource: e.Resource}, e.Object.DeepCopy()); drop {
				c.neutralize(what + ": " + strings.Join(changed, ", "))
			}
			c.NotRestored++
			return nil
		case err != nil:
			c.Compared++
			c.differ(fmt.Sprintf("%s could not be read: %v", what, err))
			return nil
		}
		c.Compared++
		gr := schema.GroupResource{Group: e.Group, Resource: e.Resource}
		want := e.Object.DeepCopy()
		want.SetNamespace(target)
		restore.Adjust(gr, want, func(ns string) string {
			if to, ok := mapping[ns]; ok {
				return to
			}
			return ns
		})
		if _, err := mappings.Apply(gr, want); err != nil {
			c.differ(fmt.Sprintf("%s: %v", what, err))
			return nil
		}
		// As the test restore made it: inert.
		if changed, _ := restore.Inert(gr, want); len(changed) > 0 {
			c.neutralize(what + ": " + strings.Join(changed, ", "))
		}
		restore.Clean(want, backupName, restoreName, false)
		// The copy beside the original gets node ports of its own.
		restore.DropNodePorts(want)
		if diff := restore.Changes(ctx, ri, live, want); len(diff) > 0 {
			c.differ(fmt.Sprintf("%s differs from the backup in %s", what, strings.Join(diff, ", ")))
			return nil
		}
		c.Identical++
		return nil
	})
	sort.Strings(c.Differing)
	sort.Strings(c.Neutralized)
	if n := c.neutralized - len(c.Neutralized); n > 0 {
		c.Neutralized = append(c.Neutralized, fmt.Sprintf("and %d more", n))
	}
	return c, err
}

func (c *Comparison) neutralize(s string) {
	c.neutralized++
	if len(c.Neutralized) < maxFailures {
		c.Neutralized = append(c.Neutralized, s)
	}
}

// NeutralizedCount is how many items the test restore made inert.
func (c *Comparison) NeutralizedCount() int { return c.neutralized }

func (c *Comparison) differ(s string) {
	if len(c.Differing) < maxFailures {
		c.Differing = append(c.Differing, s)
	}
}

// Cleanup deletes the target namespaces the test restore made — those
// labelled with its name — and, with them, everything restored into
// them. A target namespace not made by it is left, and said. It returns
// what it left and why.
func Cleanup(ctx context.Context, c client.Client, restoreName string, targets []string) []string {
	var left []string
	for _, name := range targets {
		ns := &corev1.Namespace{}
		err := c.Get(ctx, client.ObjectKey{Name: name}, ns)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			left = append(left, fmt.Sprintf("namespace %s could not be read: %v", name, err))
			continue
		case ns.Labels[salvorv1.RestoreNameLabel] != salvorv1.LabelValue(restoreName):
			left = append(left, fmt.Sprintf("namespace %s was not made by test restore %s; left as it is", name, restoreName))
			continue
		case ns.DeletionTimestamp != nil:
			continue
		}
		uid := ns.UID
		if err := c.Delete(ctx, ns, &client.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
			left = append(left, fmt.Sprintf("deleting namespace %s: %v", name, err))
		}
	}
	return left
}

// SortedValues are a mapping's targets, sorted.
func SortedValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}
