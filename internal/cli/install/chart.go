package install

import (
	"fmt"
	"io/fs"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	"path"
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/salvor-dev/salvor/config/crd"
	"github.com/salvor-dev/salvor/internal/resources"
)

// ChartDir is where the Helm chart lives in the repository.
const ChartDir = "charts/salvor"

// ChartFiles are the chart's files generated from this package, so the
// chart and `salvor install` share one source for what they grant and
// define: the CRDs (Helm installs crds/ before the templates) and the
// rules of every role (files/roles.yaml, which the templates read). The
// rules the server gets for built-in resources come from a cluster's
// discovery instead (BuiltinResources). `make generate` writes them.
func ChartFiles() (map[string][]byte, error) {
	out := map[string][]byte{}
	names, err := fs.Glob(crd.Files, "*.yaml")
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		b, err := crd.Files.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out[path.Join("crds", n)] = b
	}
	roles, err := yaml.Marshal(struct {
		Namespace     []rbacv1.PolicyRule `json:"namespace"`
		Mover         []rbacv1.PolicyRule `json:"mover"`
		Viewer        []rbacv1.PolicyRule `json:"viewer"`
		Operator      []rbacv1.PolicyRule `json:"operator"`
		MetricsReader []rbacv1.PolicyRule `json:"metricsReader"`
		Auth          []rbacv1.PolicyRule `json:"auth"`
		CSI           []rbacv1.PolicyRule `json:"csi"`
		TestRestores  []rbacv1.PolicyRule `json:"testRestores"`
		ExecHooks     []rbacv1.PolicyRule `json:"execHooks"`
		NodeAgent     []rbacv1.PolicyRule `json:"nodeAgent"`
		NodeAgentCl   []rbacv1.PolicyRule `json:"nodeAgentCluster"`
		NotRestored   []string            `json:"notRestored"`
	}{NamespaceRules, MoverRules, ViewerRules, OperatorRules, MetricsReaderRules, AuthRules, CSIRules, TestRestoreRules, ExecHookRules,
		NodeAgentRules, NodeAgentClusterRules, resources.NotRestored})
	if err != nil {
		return nil, err
	}
	out["files/roles.yaml"] = append([]byte("# Generated from internal/cli/install by `make generate`: the rules `salvor install`\n# grants, which the chart's templates grant too. Do not edit.\n"), roles...)
	tenants, err := tenantsFile()
	if err != nil {
		return nil, err
	}
	out[TenantsFile] = tenants
	return out, nil
}

// TenantsFile holds what `salvor install --tenants` adds, for the chart's
// tenants.enabled: the rules of the tenant role and of the server's rights
// over tenants' objects, and the specs of the requester policies, with
// ChartNamespace and ChartServiceAccount where the release's namespace
// and the server's account go.
const TenantsFile = "files/tenants.yaml"

// The words the chart replaces in TenantsFile. Neither can be a
// namespace's or an account's name (both have upper-case letters).
const (
	ChartNamespace      = "RELEASE_NAMESPACE"
	ChartServiceAccount = "SERVER_SERVICE_ACCOUNT"
)

func tenantsFile() ([]byte, error) {
	specs := map[string]any{"tenant": TenantRules, "tenantServer": TenantServerRules}
	for _, obj := range TenantObjects(ChartNamespace, ChartServiceAccount, nil) {
		switch o := obj.(type) {
		case *admissionv1.MutatingAdmissionPolicy:
			specs["mutatingPolicy"] = o.Spec
		case *admissionv1.MutatingAdmissionPolicyBinding:
			specs["mutatingBinding"] = o.Spec
		case *admissionv1.ValidatingAdmissionPolicy:
			specs["validatingPolicy"] = o.Spec
		case *admissionv1.ValidatingAdmissionPolicyBinding:
			specs["validatingBinding"] = o.Spec
		}
	}
	b, err := yaml.Marshal(specs)
	if err != nil {
		return nil, err
	}
	return append([]byte("# Generated from internal/cli/install by `make generate`: what `salvor install --tenants`\n# adds, which the chart's tenants.enabled renders ("+ChartNamespace+" and "+ChartServiceAccount+" replaced). Do not edit.\n"), b...), nil
}

// BuiltinResourcesFile is the chart's list of the resources a cluster
// serves without CRDs (with Salvor's own), by API group.
const BuiltinResourcesFile = "files/builtin-resources.yaml"

// BuiltinResources renders what the server may do with the resources of
// a cluster whose discovery is groups, leaving out the groups of custom
// resources other than Salvor's (the chart finds those in the cluster it
// is installed into) — the chart's copy of what `salvor install` learns
// from discovery.
func BuiltinResources(groups map[string]*Access, customGroups []string, kubeVersion string) ([]byte, error) {
	kept := map[string]*Access{}
	custom := map[string]bool{}
	for _, g := range customGroups {
		custom[g] = true
	}
	for g, a := range groups {
		if !custom[g] {
			kept[g] = a
		}
	}
	b, err := yaml.Marshal(map[string]any{"groups": kept})
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(kept))
	for g := range kept {
		names = append(names, g)
	}
	sort.Strings(names)
	head := fmt.Sprintf("# By API group, of the resources Kubernetes %s serves (from its discovery): what the\n"+
		"# server reads (get, list), what it restores (create, patch), and whose status it restores\n"+
		"# (patch resource/status); %d groups. Written by\n"+
		"# `make chart-resources`; the end-to-end tests fail when it differs from the testbed's.\n", kubeVersion, len(names))
	return append([]byte(head), b...), nil
}
