package controller

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// A Velero Backup, Restore or Schedule applies with only its apiVersion
// changed, and may carry fields of Velero's specs that Salvor's have not.
// Their CRDs keep such fields (x-kubernetes-preserve-unknown-fields) so
// the server can judge them: pruned on the way in, a Velero Restore's
// resourcePolicy would be dropped and the restore make more than asked. A
// field that would change what is selected or what is made fails
// validation; the others tune mechanisms Salvor has not, and are listed as
// ignored.

// backupRefused are the fields of Velero's BackupSpec that would change
// what a backup selects or does, with what to do instead. Salvor's
// BackupSpec has every such field of Velero 1.18's; one Velero adds goes
// here until it does, so that a backup asking for it never ends Completed
// without it.
var backupRefused = map[string]string{}

// restoreRefused are the fields of Velero's RestoreSpec that would change
// what a restore selects or the objects it makes. Salvor's RestoreSpec has
// every such field of Velero 1.18's; one Velero adds goes here until it
// does.
var restoreRefused = map[string]string{}

// unknownFields returns the fields of the stored object at path that the
// Go type of the value there has not: the typed object read from the API
// has dropped them.
func unknownFields(ctx context.Context, reader client.Reader, obj client.Object, typed any, path ...string) (map[string]any, error) {
	u := &unstructured.Unstructured{}
	kind := reflect.TypeOf(obj).Elem().Name()
	u.SetGroupVersionKind(salvorv1.GroupVersion.WithKind(kind))
	if err := reader.Get(ctx, client.ObjectKeyFromObject(obj), u); err != nil {
		return nil, fmt.Errorf("%s %s: reading its stored spec: %w", strings.ToLower(kind), obj.GetName(), err)
	}
	m, _, err := unstructured.NestedMap(u.Object, path...)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %s: %w", strings.ToLower(kind), obj.GetName(), strings.Join(path, "."), err)
	}
	known := jsonFields(reflect.TypeOf(typed))
	for k := range m {
		if known[k] {
			delete(m, k)
		}
	}
	return m, nil
}

// jsonFields are the JSON names of a struct type's fields.
func jsonFields(t reflect.Type) map[string]bool {
	out := map[string]bool{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out[name] = true
		}
	}
	return out
}

// judgeUnknown splits the fields Salvor's type has not into problems (a
// refused field that carries something, under prefix) and ignored ones,
// both sorted.
func judgeUnknown(extra map[string]any, refused map[string]string, prefix string) (problems, ignored []string) {
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		why, refuse := refused[k]
		switch v := extra[k]; {
		case !refuse, v == false: // false asks for nothing: Velero's tools write it
			ignored = append(ignored, k)
		case !empty(v):
			problems = append(problems, fmt.Sprintf("%s%s: %s", prefix, k, why))
		}
	}
	return problems, ignored
}

// empty says a field carries nothing: Velero's tooling writes `hooks: {}`.
func empty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		for _, e := range v {
			if !empty(e) {
				return false
			}
		}
		return true
	case []any:
		return len(v) == 0
	}
	return false
}
