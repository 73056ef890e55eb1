package resourcepolicy

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		want string // in the problems; "" none
	}{
		{"Velero's documented template", `version: v1
includeExcludePolicy:
  includedClusterScopedResources: [crd, pv]
  excludedClusterScopedResources: []
  includedNamespaceScopedResources: [pod, service, deployment, pvc]
  excludedNamespaceScopedResources: [configmap, secret]
volumePolicies:
- conditions:
    capacity: "10,100Gi"
    csi:
      driver: ebs.csi.aws.com
    storageClass: [gp2, standard]
    pvcPhase: [Pending]
    pvcVolumeMode: Block
    pvcAccessModes: [ReadWriteOnce]
  action:
    type: skip
- conditions:
    capacity: "0,100Gi"
    nfs:
      server: 192.168.200.90
      path: /mnt/data
  action:
    type: skip
- conditions:
    nfs: {}
  action:
    type: skip
- conditions:
    csi: {}
  action:
    type: snapshot
- conditions:
    volumeTypes: [emptyDir, downwardAPI, configMap, cinder]
  action:
    type: skip
- conditions:
    pvcLabels:
      backup: true
      tier: 3
  action:
    type: snapshot
`, ""},
		{"not YAML of policies", "version: v1\nvolumePolicy: []", `reading its resource policies: error unmarshaling JSON: while decoding JSON: json: unknown field "volumePolicy"`},
		{"an unknown condition", "version: v1\nvolumePolicies: [{conditions: {size: 1Gi}, action: {type: skip}}]", `unknown field "size"`},
		{"another version", "version: v2\nvolumePolicies: []", `version "v2": resource policies have version v1`},
		{"fs-backup", "version: v1\nvolumePolicies: [{conditions: {nfs: {}}, action: {type: skip}}, {conditions: {}, action: {type: fs-backup}}]", ""},
		{"fs-backup with parameters", "version: v1\nvolumePolicies: [{conditions: {}, action: {type: fs-backup, parameters: {a: b}}}]", "fs-backup takes none"},
		{"custom", "version: v1\nvolumePolicies: [{conditions: {}, action: {type: custom, parameters: {a: b}}}]", "action custom: Salvor runs no custom volume actions"},
		{"no action", "version: v1\nvolumePolicies: [{conditions: {}}]", "volumePolicies[0]: action.type is required: skip, snapshot or fs-backup"},
		{"an unknown action", "version: v1\nvolumePolicies: [{conditions: {}, action: {type: copy}}]", `action.type "copy": use skip, snapshot or fs-backup`},
		{"parameters on skip", "version: v1\nvolumePolicies: [{conditions: {}, action: {type: skip, parameters: {a: b}}}]", "action.parameters: only Velero's custom action takes parameters"},
		{"a capacity that is not a range", "version: v1\nvolumePolicies: [{conditions: {capacity: 5Gi}, action: {type: skip}}]", `conditions.capacity "5Gi": write a range`},
		{"a capacity that is not a quantity", "version: v1\nvolumePolicies: [{conditions: {capacity: '1Gi,lots'}, action: {type: skip}}]", `"lots" is not a quantity`},
		{"an upside-down capacity", "version: v1\nvolumePolicies: [{conditions: {capacity: '10Gi,1Gi'}, action: {type: skip}}]", "the upper bound is below the lower one"},
		{"attributes without a driver", "version: v1\nvolumePolicies: [{conditions: {csi: {volumeAttributes: {a: b}}}, action: {type: skip}}]", "conditions.csi.volumeAttributes needs conditions.csi.driver"},
		{"an unknown volume type", "version: v1\nvolumePolicies: [{conditions: {volumeTypes: [emptydir]}, action: {type: skip}}]", `conditions.volumeTypes: "emptydir" is not a volume type: use one of awsAzureDisk,`},
		{"a bad label", "version: v1\nvolumePolicies: [{conditions: {pvcLabels: {'a b': c}}, action: {type: skip}}]", "conditions.pvcLabels:"},
		{"a label that is a list", "version: v1\nvolumePolicies: [{conditions: {pvcLabels: {a: [b]}}, action: {type: skip}}]", "a: the value must be a string, a number or a boolean"},
		{"a phase", "version: v1\nvolumePolicies: [{conditions: {pvcPhase: [bound]}, action: {type: skip}}]", `conditions.pvcPhase: "bound" is not one of Pending, Bound, Lost`},
		{"a volume mode", "version: v1\nvolumePolicies: [{conditions: {pvcVolumeMode: Raw}, action: {type: skip}}]", `conditions.pvcVolumeMode: "Raw" is not one of Filesystem, Block`},
		{"an access mode", "version: v1\nvolumePolicies: [{conditions: {pvcAccessModes: [RWO]}, action: {type: skip}}]", `conditions.pvcAccessModes: "RWO" is not one of ReadWriteOnce`},
		{"a star in the lists", "version: v1\nincludeExcludePolicy: {includedClusterScopedResources: ['*']}", `includeExcludePolicy: includedClusterScopedResources and excludedClusterScopedResources name resources, not "*"`},
		{"in both lists", "version: v1\nincludeExcludePolicy: {includedNamespaceScopedResources: [pods], excludedNamespaceScopedResources: [pods]}", `"pods" is both in includedNamespaceScopedResources and excludedNamespaceScopedResources`},
		{"Velero's filter policies", `version: v1
clusterScopedFilterPolicy:
  resourceFilters:
  - kinds: [clusterroles, clusterrolebindings.rbac.authorization.k8s.io]
    labelSelector: {matchLabels: {team: a}}
    excludedNames: ["system:*"]
  - kinds: [StorageClass]
    orLabelSelectors: [{matchLabels: {tier: fast}}, {matchExpressions: [{key: tier, operator: In, values: [slow]}]}]
namespacedFilterPolicies:
- namespaces: [prod, "app-*"]
  resourceFilters:
  - kinds: [configmaps, secrets]
    names: ["db-*", app-config]
    excludedNames: ["*-tmp"]
  - kinds: [deployments.apps]
    labelSelector: {matchLabels: {app: web}}
  - labelSelector: {matchLabels: {backup: "true"}}
- namespaces: ["*"]
  resourceFilters:
  - kinds: ["*"]
`, ""},
		{"a cluster filter without kinds", "version: v1\nclusterScopedFilterPolicy: {resourceFilters: [{kinds: ['*']}]}", "clusterScopedFilterPolicy.resourceFilters[0]: kinds is required: a cluster-scoped filter names its resources"},
		{"a cluster filter policy without filters", "version: v1\nclusterScopedFilterPolicy: {resourceFilters: []}", "clusterScopedFilterPolicy.resourceFilters is empty"},
		{"a kind in two cluster filters", "version: v1\nclusterScopedFilterPolicy: {resourceFilters: [{kinds: [clusterroles]}, {kinds: [ClusterRoles]}]}",
			`clusterScopedFilterPolicy.resourceFilters[1]: kinds: "ClusterRoles" is in resourceFilters[0] too`},
		{"a namespaced policy without namespaces", "version: v1\nnamespacedFilterPolicies: [{resourceFilters: [{kinds: [pods]}]}]", "namespacedFilterPolicies[0].namespaces is empty"},
		{"a namespaced policy without filters", "version: v1\nnamespacedFilterPolicies: [{namespaces: [a]}]", "namespacedFilterPolicies[0].resourceFilters is empty"},
		{"a namespace in two policies", "version: v1\nnamespacedFilterPolicies: [{namespaces: [a], resourceFilters: [{}]}, {namespaces: [b, a], resourceFilters: [{}]}]",
			`namespacedFilterPolicies[1].namespaces: "a" is in namespacedFilterPolicies[0] too`},
		{"a bad namespace pattern", "version: v1\nnamespacedFilterPolicies: [{namespaces: ['app-{a,b}'], resourceFilters: [{}]}]", `namespacedFilterPolicies[0].namespaces: "app-{a,b}" is neither a namespace's name nor a pattern`},
		{"a pattern Velero would not read", "version: v1\nnamespacedFilterPolicies: [{namespaces: ['app-[a-'], resourceFilters: [{}]}]", `namespace pattern "app-[a-" in namespacedFilterPolicies[0].namespaces is malformed`},
		{"two catch-all filters", "version: v1\nnamespacedFilterPolicies: [{namespaces: [a], resourceFilters: [{}, {kinds: ['*']}]}]", "namespacedFilterPolicies[0].resourceFilters[1]: a second filter without kinds"},
		{"names on a catch-all filter", "version: v1\nnamespacedFilterPolicies: [{namespaces: [a], resourceFilters: [{names: [x]}]}]", "names and excludedNames need kinds"},
		{"a star among kinds", "version: v1\nnamespacedFilterPolicies: [{namespaces: [a], resourceFilters: [{kinds: ['*', pods]}]}]", `kinds: "*" stands alone`},
		{"both kinds of selector", "version: v1\nnamespacedFilterPolicies: [{namespaces: [a], resourceFilters: [{kinds: [pods], labelSelector: {}, orLabelSelectors: [{}]}]}]",
			"namespacedFilterPolicies[0].resourceFilters[0]: labelSelector and orLabelSelectors are both set"},
		{"a bad selector", "version: v1\nnamespacedFilterPolicies: [{namespaces: [a], resourceFilters: [{kinds: [pods], labelSelector: {matchExpressions: [{key: a, operator: Near}]}}]}]",
			"namespacedFilterPolicies[0].resourceFilters[0]: labelSelector is invalid"},
		{"a bad name pattern", "version: v1\nnamespacedFilterPolicies: [{namespaces: [a], resourceFilters: [{kinds: [pods], excludedNames: ['db-[0-']}]}]",
			`namespacedFilterPolicies[0].resourceFilters[0]: excludedNames: "db-[0-" is malformed`},
		{"an unknown filter field", "version: v1\nnamespacedFilterPolicies: [{namespaces: [a], resourceFilters: [{resources: [pods]}]}]", `unknown field "resources"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, problems := Parse("policies salvor/p", tc.text)
			got := strings.Join(problems, "\n")
			if tc.want == "" {
				if got != "" || p == nil {
					t.Fatalf("refused: %s", got)
				}
				return
			}
			if p != nil || !strings.Contains(got, tc.want) || !strings.HasPrefix(got, "policies salvor/p: ") {
				t.Fatalf("problems %q, want one with %q", got, tc.want)
			}
		})
	}
}

func object(kind string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: fields}
	u.SetAPIVersion("v1")
	u.SetKind(kind)
	return u
}

func TestDecide(t *testing.T) {
	csiPV := object("PersistentVolume", map[string]any{"spec": map[string]any{
		"capacity": map[string]any{"storage": "50Gi"}, "storageClassName": "gp2",
		"csi": map[string]any{"driver": "ebs.csi.aws.com", "volumeHandle": "vol-1", "volumeAttributes": map[string]any{"type": "io2", "zone": "a"}}}})
	nfsPV := object("PersistentVolume", map[string]any{"spec": map[string]any{
		"capacity": map[string]any{"storage": "1Ti"}, "nfs": map[string]any{"server": "10.0.0.9", "path": "/exports/data"}}})
	hostPV := object("PersistentVolume", map[string]any{"spec": map[string]any{
		"capacity": map[string]any{"storage": "1Gi"}, "hostPath": map[string]any{"path": "/data"}}})
	claim := object("PersistentVolumeClaim", map[string]any{
		"metadata": map[string]any{"name": "data", "namespace": "shop", "labels": map[string]any{"tier": "scratch", "app": "db"}},
		"spec":     map[string]any{"volumeMode": "Filesystem", "accessModes": []any{"ReadWriteOnce", "ReadOnlyMany"}},
		"status":   map[string]any{"phase": "Bound"}})
	for _, tc := range []struct {
		name       string
		conditions string
		pv         *unstructured.Unstructured
		claim      *unstructured.Unstructured
		match      bool
	}{
		{"no conditions: every volume", "{}", hostPV, nil, true},
		{"capacity in range", "{capacity: '10Gi,100Gi'}", csiPV, claim, true},
		{"capacity below", "{capacity: '100Gi,1Ti'}", csiPV, claim, false},
		{"capacity with no upper bound", "{capacity: '100Gi,'}", nfsPV, nil, true},
		{"capacity with no lower bound", "{capacity: ',1Gi'}", hostPV, nil, true},
		{"capacity, bounds included", "{capacity: '1Gi,1Gi'}", hostPV, nil, true},
		{"storage class", "{storageClass: [standard, gp2]}", csiPV, claim, true},
		{"storage class, none", "{storageClass: [gp2]}", nfsPV, nil, false},
		{"any CSI volume", "{csi: {}}", csiPV, claim, true},
		{"any CSI volume, an NFS one", "{csi: {}}", nfsPV, nil, false},
		{"a driver", "{csi: {driver: ebs.csi.aws.com}}", csiPV, claim, true},
		{"another driver", "{csi: {driver: efs.csi.aws.com}}", csiPV, claim, false},
		{"a driver's attributes", "{csi: {driver: ebs.csi.aws.com, volumeAttributes: {type: io2}}}", csiPV, claim, true},
		{"other attributes", "{csi: {driver: ebs.csi.aws.com, volumeAttributes: {type: gp3}}}", csiPV, claim, false},
		{"any NFS volume", "{nfs: {}}", nfsPV, nil, true},
		{"an NFS server", "{nfs: {server: 10.0.0.9}}", nfsPV, nil, true},
		{"an NFS path of another server", "{nfs: {server: 10.0.0.8, path: /exports/data}}", nfsPV, nil, false},
		{"an NFS path", "{nfs: {path: /exports/data}}", nfsPV, nil, true},
		{"volume types", "{volumeTypes: [hostPath, local]}", hostPV, nil, true},
		{"volume types, csi", "{volumeTypes: [csi]}", csiPV, claim, true},
		{"a pod volume type matches no persistent volume", "{volumeTypes: [emptyDir]}", hostPV, nil, false},
		{"the claim's labels", "{pvcLabels: {tier: scratch}}", csiPV, claim, true},
		{"the claim's labels, one missing", "{pvcLabels: {tier: scratch, env: prod}}", csiPV, claim, false},
		{"a claim condition, no claim", "{pvcLabels: {tier: scratch}}", hostPV, nil, false},
		{"the claim's phase", "{pvcPhase: [Pending, Bound]}", csiPV, claim, true},
		{"the claim's phase, another", "{pvcPhase: [Lost]}", csiPV, claim, false},
		{"the claim's volume mode", "{pvcVolumeMode: Block}", csiPV, claim, false},
		{"the claim's access modes, all of them", "{pvcAccessModes: [ReadOnlyMany, ReadWriteOnce]}", csiPV, claim, true},
		{"the claim's access modes, not all", "{pvcAccessModes: [ReadWriteOnce]}", csiPV, claim, false},
		{"every condition must hold", "{csi: {}, storageClass: [gp2], capacity: '1Gi,10Gi'}", csiPV, claim, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, problems := Parse("policies salvor/p", "version: v1\nvolumePolicies:\n- {conditions: {nfs: {server: nowhere}}, action: {type: snapshot}}\n- {conditions: "+tc.conditions+", action: {type: skip}}")
			if len(problems) > 0 {
				t.Fatal(problems)
			}
			d := p.Decide(tc.pv, tc.claim)
			if tc.match != (d.Action == Skip) {
				t.Fatalf("decision %+v, want a match: %v", d, tc.match)
			}
			if tc.match && (d.Policy != 1 || d.String() != "volumePolicies[1] of policies salvor/p says skip") {
				t.Fatalf("decision %q, want the second policy's", d)
			}
		})
	}
	var none *Policies
	if d := none.Decide(csiPV, claim); d.Action != "" {
		t.Fatalf("no policies decided %+v", d)
	}
}

// TestThen: a backup's volume policies come before the server's global
// ones, so they decide where both match; the global ones decide the rest,
// and a decision names the ConfigMap its policy is in.
func TestThen(t *testing.T) {
	parse := func(source, text string) *Policies {
		p, problems := Parse(source, text)
		if len(problems) > 0 {
			t.Fatal(problems)
		}
		return p
	}
	own := parse("backup's", "version: v1\nvolumePolicies: [{conditions: {nfs: {}}, action: {type: snapshot}}]\nincludeExcludePolicy: {excludedNamespaceScopedResources: [events]}")
	global := parse("global", "version: v1\nvolumePolicies: [{conditions: {}, action: {type: skip}}]\nincludeExcludePolicy: {excludedNamespaceScopedResources: [secrets]}")
	nfs := object("PersistentVolume", map[string]any{"spec": map[string]any{"nfs": map[string]any{"server": "a", "path": "/"}}})
	host := object("PersistentVolume", map[string]any{"spec": map[string]any{"hostPath": map[string]any{"path": "/data"}}})
	for _, tc := range []struct {
		name     string
		p        *Policies
		pv       *unstructured.Unstructured
		decision string
	}{
		{"the backup's first", own.Then(global), nfs, "volumePolicies[0] of backup's says snapshot"},
		{"then the global ones", own.Then(global), host, "volumePolicies[0] of global says skip"},
		{"the global ones alone", (*Policies)(nil).Then(global), nfs, "volumePolicies[0] of global says skip"},
		{"no global ones", own.Then(nil), host, ""},
	} {
		d := tc.p.Decide(tc.pv, nil)
		if got := map[bool]string{true: d.String(), false: ""}[d.Action != ""]; got != tc.decision {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.decision)
		}
	}
	if l := own.Then(global).Lists(); l == nil || len(l.ExcludedNamespaceScopedResources) != 1 || l.ExcludedNamespaceScopedResources[0] != "events" {
		t.Errorf("merged lists %+v: want the backup's alone", l)
	}
	if l := (*Policies)(nil).Then(global).Lists(); l != nil {
		t.Errorf("the global lists %+v are used", l)
	}
}
