package install

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	chart "github.com/salvor-dev/salvor/charts/salvor"
	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/resources"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// ServerRules are what the server may do cluster-wide: get and list each
// resource it backs up, create and patch each one it restores, and patch
// the status of those (a restore's restoreStatus gives items their status
// back through it). RBAC has no deny, and a rule for "*" covers every
// subresource too — a token for any service account
// (serviceaccounts/token), a shell in any pod (pods/exec, pods/attach),
// port forwarding, the kubelet (nodes/proxy). So the rules name resources,
// as the cluster's discovery lists them, and no subresource but status;
// they hold no update, bind, escalate or impersonate, and
// delete only on CSI snapshots (CSIRules). Resources a restore leaves out
// by default (resources.NotRestored) are only read. The server may also
// ask the API server who calls its metrics endpoint (TokenReview,
// SubjectAccessReview).
func ServerRules(lists []*metav1.APIResourceList) []rbacv1.PolicyRule {
	return Rules(ServerAccess(lists))
}

// Access is what the server may do with one API group's resources: read
// them (get, list), restore them (create, patch), and restore the status
// of those of them that have a status subresource (patch resource/status).
type Access struct {
	Read   []string `json:"read,omitempty"`
	Write  []string `json:"write,omitempty"`
	Status []string `json:"status,omitempty"`
}

// ServerAccess sorts the discovered resources into what the server reads
// and what it restores, by API group.
func ServerAccess(lists []*metav1.APIResourceList) map[string]*Access {
	groups := map[string]*Access{}
	notRestored := map[string]bool{}
	for _, n := range resources.NotRestored {
		notRestored[n] = true
	}
	statuses := map[string]map[string]bool{} // by group, the resources with a status subresource one may patch
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if res, ok := strings.CutSuffix(r.Name, "/status"); ok && slices.Contains(r.Verbs, "patch") {
				if statuses[gv.Group] == nil {
					statuses[gv.Group] = map[string]bool{}
				}
				statuses[gv.Group][res] = true
			}
		}
		// Salvor's own objects are read wherever a backup looks; they are
		// written only in Salvor's namespace, as its namespace role allows.
		ownGroup := gv.Group == salvorv1.GroupVersion.Group
		for _, r := range l.APIResources {
			if r.Name == "" || strings.Contains(r.Name, "/") {
				continue
			}
			verbs := map[string]bool{}
			for _, v := range r.Verbs {
				verbs[v] = true
			}
			a := groups[gv.Group]
			if a == nil {
				a = &Access{}
			}
			if verbs["get"] && verbs["list"] {
				a.Read = appendOnce(a.Read, r.Name)
			}
			full := r.Name
			if gv.Group != "" {
				full += "." + gv.Group
			}
			if verbs["create"] && verbs["patch"] && !notRestored[full] && !ownGroup {
				a.Write = appendOnce(a.Write, r.Name)
			}
			if len(a.Read)+len(a.Write) > 0 {
				groups[gv.Group] = a
			}
		}
	}
	for g, a := range groups {
		sort.Strings(a.Read)
		sort.Strings(a.Write)
		for _, r := range a.Write {
			if statuses[g][r] {
				a.Status = append(a.Status, r+"/status")
			}
		}
		sort.Strings(a.Status) // as the chart does: "a-b/status" before "a/status"
	}
	return groups
}

// Rules turns access by group into the server's ClusterRole rules: per
// group in order, one rule to read, one to restore and one to restore
// status, then AuthRules.
// The Helm chart's template (charts/salvor) builds the same list.
func Rules(groups map[string]*Access) []rbacv1.PolicyRule {
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
	}
	sort.Strings(names)
	var rules []rbacv1.PolicyRule
	for _, g := range names {
		if rs := groups[g].Read; len(rs) > 0 {
			rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: rs, Verbs: []string{"get", "list"}})
		}
		if rs := groups[g].Write; len(rs) > 0 {
			rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: rs, Verbs: []string{"create", "patch"}})
		}
		if rs := groups[g].Status; len(rs) > 0 {
			rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: rs, Verbs: []string{"patch"}})
		}
	}
	rules = append(rules, CSIRules...)
	return append(rules, AuthRules...)
}

// CSIRules are what the built-in CSI actions need of the snapshot API,
// granted whether or not the cluster serves it yet, so that snapshots
// work once its CRDs are installed: to take and restore snapshots (get,
// list, create, patch), and to delete those it made when a backup is
// cancelled or deleted — the only delete the server holds outside its
// namespace.
var CSIRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"snapshot.storage.k8s.io"}, Resources: []string{"volumesnapshots", "volumesnapshotcontents"},
		Verbs: []string{"get", "list", "create", "patch", "delete"}},
	{APIGroups: []string{"snapshot.storage.k8s.io"}, Resources: []string{"volumesnapshotclasses"}, Verbs: []string{"get", "list"}},
}

// AuthRules let the server ask the API server who calls its metrics
// endpoint and whether they may.
var AuthRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
	{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
}

func appendOnce(list []string, s string) []string {
	for _, e := range list {
		if e == s {
			return list
		}
	}
	return append(list, s)
}

// DiscoverServerRules reads the cluster's resources and returns the
// server's rules. Groups that are not served now (an aggregated API that
// is down) are left out, and w says so: their resources are neither
// backed up nor restored until `salvor install` runs again.
func DiscoverServerRules(cfg *rest.Config, w io.Writer) ([]rbacv1.PolicyRule, error) {
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	_, lists, err := disc.ServerGroupsAndResources()
	if err != nil {
		failed, ok := err.(*discovery.ErrGroupDiscoveryFailed)
		if !ok {
			return nil, fmt.Errorf("reading the cluster's API resources, which the server's least-privilege role names one by one: %w", err)
		}
		for gv, e := range failed.Groups {
			fmt.Fprintf(w, "warning: API group %s is not served now (%v): the server's role leaves it out; run `salvor install` again once it is served\n", gv, e)
		}
	}
	return ServerRules(lists), nil
}

// TestRestoreRules are what test restores add (install --test-restores):
// deleting namespaces, to remove the ones a test restore made. RBAC cannot
// name namespaces by prefix, so the server checks, before it deletes one,
// that its own test restore made it (by label and UID).
var TestRestoreRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"delete"}},
}

// ExecHookRules are what exec hooks add (install --exec-hooks): running
// commands in pods (pods/exec), through the API server, in the containers
// of the pods a backup backs up or a restore makes; and watching pods,
// for a restore to see a pod's container come up before its hooks run.
// The right reaches every pod's shell, so it is granted only when asked
// for.
var ExecHookRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}},
	{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"watch"}},
}

// The ClusterRoles users are bound to (with a RoleBinding in Salvor's
// namespace). docs/security.md says what each allows.
var (
	salvorObjects = []string{"backups", "restores", "schedules", "backupstoragelocations", "volumesnapshotlocations",
		"volumepluginbackups", "volumepluginrestores", "backuprepositories"}
	// ViewerRules read Salvor's objects — not DownloadRequests, whose
	// URLs read a backup's logs and results.
	ViewerRules = []rbacv1.PolicyRule{
		{APIGroups: []string{salvorv1.GroupVersion.Group}, Resources: salvorObjects, Verbs: []string{"get", "list", "watch"}},
		// `salvor version` asks the server with a ServerStatusRequest.
		{APIGroups: []string{salvorv1.GroupVersion.Group}, Resources: []string{"serverstatusrequests"}, Verbs: []string{"create", "get", "delete"}},
	}
	// OperatorRules add creating (and cancelling) backups and restores,
	// running and pausing schedules, and reading logs and results through
	// DownloadRequests. Deleting backups is left to Salvor's admins.
	OperatorRules = append(append([]rbacv1.PolicyRule(nil), ViewerRules...),
		rbacv1.PolicyRule{APIGroups: []string{salvorv1.GroupVersion.Group}, Resources: []string{"backups", "restores", "schedules"}, Verbs: []string{"create", "patch"}},
		rbacv1.PolicyRule{APIGroups: []string{salvorv1.GroupVersion.Group}, Resources: []string{"downloadrequests"}, Verbs: []string{"create", "get"}},
	)
	// MetricsReaderRules let Prometheus scrape the server's metrics.
	MetricsReaderRules = []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}
)

// serverRules are the server's rules from the cluster's discovery. With
// offline (a dry run), a cluster that cannot be reached is no error: the
// rules name the built-in resources the chart ships instead, and w says
// that custom resources are left out of them.
func serverRules(k *kube.Options, offline bool, w io.Writer) ([]rbacv1.PolicyRule, error) {
	cfg, err := k.RESTConfig()
	if err == nil {
		var rules []rbacv1.PolicyRule
		if rules, err = DiscoverServerRules(cfg, w); err == nil || !offline {
			return rules, err
		}
	}
	if !offline {
		return nil, fmt.Errorf("salvor install reads the cluster's API resources to name them in the server's role: %w", err)
	}
	groups, berr := BuiltinGroups()
	if berr != nil {
		return nil, berr
	}
	fmt.Fprintf(w, "warning: no cluster to read API resources from (%v): the server's role names the built-in resources of Kubernetes and Salvor's own only; custom resources are neither backed up nor restored until `salvor install` (or `--dry-run` with a cluster) runs against the cluster\n", err)
	return Rules(groups), nil
}

// BuiltinGroups is the chart's list of built-in resources (the rules a
// cluster without custom resources gives the server), by API group.
func BuiltinGroups() (map[string]*Access, error) {
	var list struct {
		Groups map[string]*Access `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(chart.BuiltinResources, &list); err != nil || len(list.Groups) == 0 {
		return nil, fmt.Errorf("the built-in resources shipped with salvor (%s) cannot be read: %v", BuiltinResourcesFile, err)
	}
	return list.Groups, nil
}
