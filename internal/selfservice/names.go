package selfservice

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// The labels that, on a mirror in the server's namespace, name the
// tenant's object it carries out: the mirror follows that object only,
// never an earlier one of the same name.
const (
	namespaceLabel = salvorv1.TenantNamespaceLabel
	nameLabel      = salvorv1.TenantNameLabel
	uidLabel       = salvorv1.TenantUIDLabel
)

// mirrorName is the name of a tenant object's mirror in the server's
// namespace: namespace.name, which no two tenant objects share (a
// namespace's name has no dot).
func mirrorName(namespace, name string) (string, error) {
	n := namespace + "." + name
	if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
		return "", fmt.Errorf("its copy in the server's namespace would be named %q, which is not a valid name (%s): choose a shorter name", n, strings.Join(errs, "; "))
	}
	return n, nil
}

// mirrorLabels mark a mirror as the copy of obj.
func mirrorLabels(obj client.Object) map[string]string {
	return map[string]string{namespaceLabel: obj.GetNamespace(), nameLabel: obj.GetName(), uidLabel: string(obj.GetUID())}
}

// mirrors tells whether mirror is the copy of obj.
func mirrors(mirror, obj client.Object) bool {
	l := mirror.GetLabels()
	return l[namespaceLabel] == obj.GetNamespace() && l[nameLabel] == obj.GetName() && l[uidLabel] == string(obj.GetUID())
}

// tenantOf is the tenant object a mirror carries out, if it is one.
func tenantOf(mirror client.Object) (client.ObjectKey, bool) {
	l := mirror.GetLabels()
	if l[namespaceLabel] == "" || l[nameLabel] == "" {
		return client.ObjectKey{}, false
	}
	return client.ObjectKey{Namespace: l[namespaceLabel], Name: l[nameLabel]}, true
}
