package resourcepolicy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/salvor-dev/salvor/internal/configmapref"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// document is the ConfigMap's value, field for field as Velero reads it.
type document struct {
	Version                   string                 `json:"version"`
	VolumePolicies            []volumeSpec           `json:"volumePolicies,omitempty"`
	IncludeExcludePolicy      *IncludeExclude        `json:"includeExcludePolicy,omitempty"`
	ClusterScopedFilterPolicy *clusterFilterSpec     `json:"clusterScopedFilterPolicy,omitempty"`
	NamespacedFilterPolicies  []namespacedFilterSpec `json:"namespacedFilterPolicies,omitempty"`
}

type volumeSpec struct {
	Conditions conditionSpec `json:"conditions"`
	Action     actionSpec    `json:"action"`
}

type conditionSpec struct {
	Capacity       string    `json:"capacity,omitempty"`
	StorageClass   []string  `json:"storageClass,omitempty"`
	NFS            *nfsSpec  `json:"nfs,omitempty"`
	CSI            *csiSpec  `json:"csi,omitempty"`
	VolumeTypes    []string  `json:"volumeTypes,omitempty"`
	PVCLabels      stringMap `json:"pvcLabels,omitempty"`
	PVCPhase       []string  `json:"pvcPhase,omitempty"`
	PVCVolumeMode  string    `json:"pvcVolumeMode,omitempty"`
	PVCAccessModes []string  `json:"pvcAccessModes,omitempty"`
}

// nfsSpec and csiSpec are volume sources; `nfs: {}` (any NFS volume) is
// not the same as no nfs condition, hence pointers where they are used.
type nfsSpec struct {
	Server string `json:"server,omitempty"`
	Path   string `json:"path,omitempty"`
}

type csiSpec struct {
	Driver           string    `json:"driver,omitempty"`
	VolumeAttributes stringMap `json:"volumeAttributes,omitempty"`
}

type actionSpec struct {
	Type       string         `json:"type"`
	Parameters map[string]any `json:"parameters,omitempty"`
}

// stringMap reads YAML's scalars as the strings they are written as, as
// Velero does: a label condition `backup: true` means the value "true".
type stringMap map[string]string

func (m *stringMap) UnmarshalJSON(b []byte) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var raw map[string]any
	if err := d.Decode(&raw); err != nil {
		return err
	}
	out := stringMap{}
	for k, v := range raw {
		switch v := v.(type) {
		case string:
			out[k] = v
		case bool, json.Number:
			out[k] = fmt.Sprint(v)
		default:
			return fmt.Errorf("%s: the value must be a string, a number or a boolean", k)
		}
	}
	*m = out
	return nil
}

// IncludeExclude are the per-scope resource lists of a policy's
// includeExcludePolicy, with the meaning of the backup fields they are
// named after.
type IncludeExclude struct {
	IncludedClusterScopedResources   []string `json:"includedClusterScopedResources,omitempty"`
	ExcludedClusterScopedResources   []string `json:"excludedClusterScopedResources,omitempty"`
	IncludedNamespaceScopedResources []string `json:"includedNamespaceScopedResources,omitempty"`
	ExcludedNamespaceScopedResources []string `json:"excludedNamespaceScopedResources,omitempty"`
}

// Action is what a volume policy does with the volumes it matches.
type Action string

const (
	// Skip backs up the volume's objects, not its data.
	Skip Action = "skip"
	// Snapshot snapshots the volume, whatever snapshotVolumes says.
	Snapshot Action = "snapshot"
	// FSBackup copies the volume's files from the running pod that mounts
	// it (file-system backup, by the node agent) instead of snapshotting
	// it, whatever the pod's annotations say.
	FSBackup Action = "fs-backup"
)

// Policies are a backup's or a restore's resource policies, parsed and
// checked.
type Policies struct {
	source  string
	volumes []volumePolicy
	lists   *IncludeExclude
	filters *Filters
}

type volumePolicy struct {
	source   string // the ConfigMap it is in, for messages
	n        int    // its index in volumePolicies
	action   Action
	capacity capacity
	classes  []string
	nfs      *nfsSpec
	csi      *csiSpec
	types    []string // keys of a persistent volume's spec
	labels   labels.Selector
	phases   []string
	mode     string
	access   []string
}

// capacity is a range of sizes; a zero upper bound has none.
type capacity struct{ low, high resource.Quantity }

func (c capacity) contains(q resource.Quantity) bool {
	return c.low.Cmp(q) <= 0 && (c.high.IsZero() || c.high.Cmp(q) >= 0)
}

// volumeTypes maps Velero's volume type names to the key of a persistent
// volume's spec that holds that source. The pod volume types (configMap,
// emptyDir, ...) are Velero's too; a persistent volume is none of them.
var volumeTypes = map[string]string{
	"awsElasticBlockStore": "awsElasticBlockStore", "azureDisk": "azureDisk", "azureFile": "azureFile",
	"cephfs": "cephfs", "cinder": "cinder", "csi": "csi", "fc": "fc", "flocker": "flocker", "flexVolume": "flexVolume",
	"gcePersistentDisk": "gcePersistentDisk", "glusterfs": "glusterfs", "hostPath": "hostPath", "iscsi": "iscsi",
	"local": "local", "nfs": "nfs", "photonPersistentDisk": "photonPersistentDisk", "portworxVolume": "portworxVolume",
	"quobyte": "quobyte", "rbd": "rbd", "scaleIO": "scaleIO", "storageOS": "storageos", "vsphereVolume": "vsphereVolume",
	"awsAzureDisk": "", "configMap": "", "downwardAPI": "", "emptyDir": "", "ephemeral": "", "gitRepo": "", "projected": "", "secret": "",
}

var (
	claimPhases = []string{string(corev1.ClaimPending), string(corev1.ClaimBound), string(corev1.ClaimLost)}
	volumeModes = []string{string(corev1.PersistentVolumeFilesystem), string(corev1.PersistentVolumeBlock)}
	accessModes = []string{string(corev1.ReadWriteOnce), string(corev1.ReadOnlyMany), string(corev1.ReadWriteMany), string(corev1.ReadWriteOncePod)}
)

// Parse reads the policies in text, a ConfigMap's one value; source names
// the ConfigMap in messages. The problems say what to fix; with any, the
// policies are nil.
func Parse(source, text string) (*Policies, []string) {
	var doc document
	if err := yaml.UnmarshalStrict([]byte(text), &doc); err != nil {
		return nil, []string{fmt.Sprintf("%s: reading its resource policies: %v", source, err)}
	}
	var problems []string
	add := func(format string, args ...any) {
		problems = append(problems, source+": "+fmt.Sprintf(format, args...))
	}
	if doc.Version != "v1" {
		add("version %q: resource policies have version v1", doc.Version)
	}
	out := &Policies{source: source, lists: doc.IncludeExcludePolicy}
	filters, ps := compileFilters(doc.ClusterScopedFilterPolicy, doc.NamespacedFilterPolicies)
	for _, p := range ps {
		add("%s", p)
	}
	if !filters.Empty() {
		out.filters = filters
	}
	for i, spec := range doc.VolumePolicies {
		v, ps := compile(source, i, spec)
		for _, p := range ps {
			add("volumePolicies[%d]: %s", i, p)
		}
		out.volumes = append(out.volumes, v)
	}
	if l := doc.IncludeExcludePolicy; l != nil {
		for _, pair := range []struct {
			scope    string
			inc, exc []string
		}{{"ClusterScopedResources", l.IncludedClusterScopedResources, l.ExcludedClusterScopedResources},
			{"NamespaceScopedResources", l.IncludedNamespaceScopedResources, l.ExcludedNamespaceScopedResources}} {
			if slices.Contains(pair.inc, "*") || slices.Contains(pair.exc, "*") {
				add("includeExcludePolicy: included%s and excluded%s name resources, not \"*\" (Velero's rule): name them, or put \"*\" in the backup's own field", pair.scope, pair.scope)
			}
			for _, r := range pair.exc {
				if slices.Contains(pair.inc, r) {
					add("includeExcludePolicy: %q is both in included%s and excluded%s: remove it from one", r, pair.scope, pair.scope)
				}
			}
		}
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return out, nil
}

func compile(source string, n int, spec volumeSpec) (volumePolicy, []string) {
	c := spec.Conditions
	v := volumePolicy{source: source, n: n, action: Action(spec.Action.Type), classes: c.StorageClass, nfs: c.NFS, csi: c.CSI,
		phases: c.PVCPhase, mode: c.PVCVolumeMode, access: c.PVCAccessModes}
	var problems []string
	switch v.action {
	case Skip, Snapshot, FSBackup:
		if len(spec.Action.Parameters) > 0 {
			problems = append(problems, fmt.Sprintf("action.parameters: only Velero's custom action takes parameters; %s takes none: remove them", v.action))
		}
	case "custom":
		problems = append(problems, "action custom: Salvor runs no custom volume actions (a BackupItemAction on persistentvolumeclaims may act on the claims): use snapshot or skip")
	case "":
		problems = append(problems, "action.type is required: skip, snapshot or fs-backup")
	default:
		problems = append(problems, fmt.Sprintf("action.type %q: use skip, snapshot or fs-backup", spec.Action.Type))
	}
	var err error
	if v.capacity, err = parseCapacity(c.Capacity); err != nil {
		problems = append(problems, err.Error())
	}
	if c.CSI != nil && c.CSI.Driver == "" && len(c.CSI.VolumeAttributes) > 0 {
		problems = append(problems, "conditions.csi.volumeAttributes needs conditions.csi.driver: attributes are the driver's")
	}
	for _, t := range c.VolumeTypes {
		key, ok := volumeTypes[t]
		if !ok {
			problems = append(problems, fmt.Sprintf("conditions.volumeTypes: %q is not a volume type: use one of %s", t, strings.Join(slices.Sorted(maps.Keys(volumeTypes)), ", ")))
		}
		v.types = append(v.types, key)
	}
	if len(c.PVCLabels) > 0 {
		if v.labels, err = labels.ValidatedSelectorFromSet(labels.Set(c.PVCLabels)); err != nil {
			problems = append(problems, fmt.Sprintf("conditions.pvcLabels: %v", err))
		}
	}
	for _, f := range []struct {
		field  string
		values []string
		valid  []string
	}{{"pvcPhase", c.PVCPhase, claimPhases}, {"pvcVolumeMode", nonEmpty(c.PVCVolumeMode), volumeModes}, {"pvcAccessModes", c.PVCAccessModes, accessModes}} {
		for _, val := range f.values {
			if !slices.Contains(f.valid, val) {
				problems = append(problems, fmt.Sprintf("conditions.%s: %q is not one of %s", f.field, val, strings.Join(f.valid, ", ")))
			}
		}
	}
	return v, problems
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// parseCapacity reads Velero's "low,high" (either side may be empty: no
// bound; "" is every size).
func parseCapacity(s string) (capacity, error) {
	if s == "" {
		return capacity{}, nil
	}
	low, high, ok := strings.Cut(s, ",")
	if !ok || strings.Contains(high, ",") {
		return capacity{}, fmt.Errorf("conditions.capacity %q: write a range, \"low,high\" (\"10Gi,100Gi\"; \",5Gi\" up to 5Gi; \"5Gi,\" from 5Gi)", s)
	}
	var c capacity
	for _, b := range []struct {
		text string
		q    *resource.Quantity
	}{{low, &c.low}, {high, &c.high}} {
		t := strings.TrimSpace(b.text)
		if t == "" {
			continue
		}
		q, err := resource.ParseQuantity(t)
		if err != nil {
			return capacity{}, fmt.Errorf("conditions.capacity %q: %q is not a quantity (like 10Gi): %v", s, t, err)
		}
		*b.q = q
	}
	if !c.high.IsZero() && c.high.Cmp(c.low) < 0 {
		return capacity{}, fmt.Errorf("conditions.capacity %q: the upper bound is below the lower one", s)
	}
	return c, nil
}

// Lists are the policy's includeExcludePolicy; nil when it has none.
func (p *Policies) Lists() *IncludeExclude {
	if p == nil {
		return nil
	}
	return p.lists
}

// HasVolumePolicies tells whether any volume policy may decide a volume.
func (p *Policies) HasVolumePolicies() bool { return p != nil && len(p.volumes) > 0 }

// Then returns p's policies followed by global's volume policies, as
// Velero merges a backup's with the server's global ones: the backup's
// come first, so they decide where both match; global's resource lists
// and filter policies are not used (they are a backup's choice, not a
// baseline).
func (p *Policies) Then(global *Policies) *Policies {
	if !global.HasVolumePolicies() {
		return p
	}
	out := &Policies{source: global.source}
	if p != nil {
		out.source, out.lists, out.filters, out.volumes = p.source, p.lists, p.filters, slices.Clone(p.volumes)
	}
	out.volumes = append(out.volumes, global.volumes...)
	return out
}

// Decision is what the volume policies say of one volume.
type Decision struct {
	// Action is the first matching policy's; empty when none matched.
	Action Action
	// Policy is that policy's index in volumePolicies.
	Policy int
	source string
}

// String says which policy decided, for messages.
func (d Decision) String() string {
	return fmt.Sprintf("volumePolicies[%d] of %s says %s", d.Policy, d.source, d.Action)
}

// Decide judges persistent volume pv, with claim its claim (nil when it has
// none, or it is gone), as Velero does: the first policy whose conditions
// all hold decides.
func (p *Policies) Decide(pv, claim *unstructured.Unstructured) Decision {
	if !p.HasVolumePolicies() {
		return Decision{}
	}
	// The volume's spec and size are read once, not once per policy.
	spec, _, _ := unstructured.NestedMap(pv.Object, "spec")
	size := resource.Quantity{}
	if s, _, _ := unstructured.NestedString(spec, "capacity", "storage"); s != "" {
		if q, err := resource.ParseQuantity(s); err == nil {
			size = q
		}
	}
	for _, v := range p.volumes {
		if v.matches(spec, size, claim) {
			return Decision{Action: v.action, Policy: v.n, source: v.source}
		}
	}
	return Decision{}
}

// matches judges a persistent volume by its spec and size, and its claim.
func (v volumePolicy) matches(spec map[string]any, size resource.Quantity, claim *unstructured.Unstructured) bool {
	if !v.capacity.contains(size) {
		return false
	}
	if class, _, _ := unstructured.NestedString(spec, "storageClassName"); len(v.classes) > 0 && !slices.Contains(v.classes, class) {
		return false
	}
	if v.nfs != nil {
		nfs, found, _ := unstructured.NestedStringMap(spec, "nfs")
		if !found || v.nfs.Server != "" && nfs["server"] != v.nfs.Server || v.nfs.Path != "" && nfs["path"] != v.nfs.Path {
			return false
		}
	}
	if v.csi != nil {
		driver, found, _ := unstructured.NestedString(spec, "csi", "driver")
		if !found || v.csi.Driver != "" && driver != v.csi.Driver {
			return false
		}
		attrs, _, _ := unstructured.NestedStringMap(spec, "csi", "volumeAttributes")
		for k, want := range v.csi.VolumeAttributes {
			if got, ok := attrs[k]; !ok || got != want {
				return false
			}
		}
	}
	if len(v.types) > 0 && !slices.ContainsFunc(v.types, func(key string) bool { return key != "" && spec[key] != nil }) {
		return false
	}
	if v.labels == nil && len(v.phases) == 0 && v.mode == "" && len(v.access) == 0 {
		return true
	}
	if claim == nil {
		return false // conditions on a claim hold for no volume without one
	}
	if v.labels != nil && !v.labels.Matches(labels.Set(claim.GetLabels())) {
		return false
	}
	if phase, _, _ := unstructured.NestedString(claim.Object, "status", "phase"); len(v.phases) > 0 && !slices.Contains(v.phases, phase) {
		return false
	}
	if mode, _, _ := unstructured.NestedString(claim.Object, "spec", "volumeMode"); v.mode != "" && mode != v.mode {
		return false
	}
	if len(v.access) > 0 {
		modes, _, _ := unstructured.NestedStringSlice(claim.Object, "spec", "accessModes")
		if !sameSet(modes, v.access) {
			return false
		}
	}
	return true
}

// sameSet tells whether a and b hold the same strings.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// GlobalField is the server's flag naming its global backup volume
// policies, for configmapref's messages.
var GlobalField = configmapref.Field{Path: "--global-backup-volume-policies-configmap", Holds: "resource policies",
	Source: "global backup volume policies configmap", Owner: "server", File: "policies.yaml"}

// LoadGlobal reads the server's global backup volume policies, the
// ConfigMap name in namespace (none: nil).
func LoadGlobal(ctx context.Context, get configmapref.Getter, namespace, name string) (*Policies, []string, error) {
	if name == "" {
		return nil, nil, nil
	}
	return configmapref.Load(ctx, get, namespace, GlobalField, &corev1.TypedLocalObjectReference{Kind: "configmap", Name: name}, Parse)
}

// ForBackup reads the policies that decide backup b: its own
// (spec.resourcePolicy), then the server's global volume policies it was
// started with (the annotation the server sets, Velero's).
func ForBackup(ctx context.Context, get configmapref.Getter, b *salvorv1.Backup) (*Policies, []string, error) {
	own, problems, err := Load(ctx, get, b.Namespace, b.Spec.ResourcePolicy)
	if err != nil || len(problems) > 0 {
		return nil, problems, err
	}
	global, problems, err := LoadGlobal(ctx, get, b.Namespace, b.Annotations[salvorv1.VeleroGlobalVolumePoliciesAnnotation])
	if err != nil || len(problems) > 0 {
		return nil, problems, err
	}
	return own.Then(global), nil, nil
}

// field is spec.resourcePolicy, for configmapref's messages.
var field = configmapref.Field{Path: "spec.resourcePolicy", Holds: "resource policies", Source: "resource policies configmap", Owner: "backup", File: "policies.yaml"}

// Load reads the policies a backup's spec.resourcePolicy names (nil: none).
// The problems say what is wrong with the reference or the policies; the
// error, that the ConfigMap could not be read.
func Load(ctx context.Context, get configmapref.Getter, namespace string, ref *corev1.TypedLocalObjectReference) (*Policies, []string, error) {
	return configmapref.Load(ctx, get, namespace, field, ref, Parse)
}

// restoreField is a restore's spec.resourcePolicy, for configmapref's
// messages.
var restoreField = configmapref.Field{Path: "spec.resourcePolicy", Holds: "resource policies", Source: "resource policies configmap", Owner: "restore", File: "policies.yaml"}

// LoadForRestore reads the policies a restore's spec.resourcePolicy names
// (nil: none), as Load does. A restore takes only the filter policies:
// volume policies and includeExcludePolicy decide what a backup takes,
// and are refused (as Velero refuses them) rather than ignored.
func LoadForRestore(ctx context.Context, get configmapref.Getter, namespace string, ref *corev1.TypedLocalObjectReference) (*Policies, []string, error) {
	return configmapref.Load(ctx, get, namespace, restoreField, ref, func(source, text string) (*Policies, []string) {
		p, problems := Parse(source, text)
		if p == nil {
			return nil, problems
		}
		if len(p.volumes) > 0 {
			problems = append(problems, source+": volumePolicies decide what a backup takes of volumes, not what a restore makes: remove them (a restore takes clusterScopedFilterPolicy and namespacedFilterPolicies)")
		}
		if p.lists != nil {
			problems = append(problems, source+": includeExcludePolicy is for backups: choose a restore's resources with its includedResources and excludedResources (a restore takes clusterScopedFilterPolicy and namespacedFilterPolicies)")
		}
		if len(problems) > 0 {
			return nil, problems
		}
		return p, nil
	})
}
