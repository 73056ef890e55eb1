package backup

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// veleroFlag is a flag of `velero backup create` (and `velero schedule
// create`) for a field Salvor's spec has not. Given, the field goes into
// the spec as Velero writes it, and the server judges it as it judges a
// Velero Backup applied as YAML: one that would change what is backed up
// fails validation saying what to use instead; the others are kept and
// listed in status.ignoredFields. A Velero script runs, and nothing it
// asks for is dropped unsaid.
type veleroFlag struct {
	flag  string
	path  []string // under spec (a Schedule: spec.template)
	usage string
	value func(string) (any, error)
	bool  bool
}

var veleroFlags = []veleroFlag{
	{flag: "csi-snapshot-timeout", path: []string{"csiSnapshotTimeout"}, value: duration,
		usage: "Velero's; Salvor bounds CSI snapshots by --item-operation-timeout (kept, listed as ignored)"},
	{flag: "default-volumes-to-fs-backup", path: []string{"defaultVolumesToFsBackup"}, value: boolean, bool: true,
		usage: "Velero's; Salvor has no file-system backup (kept, listed as ignored)"},
	{flag: "snapshot-move-data", path: []string{"snapshotMoveData"}, value: boolean, bool: true,
		usage: "Velero's; Salvor has no data mover (kept, listed as ignored)"},
	{flag: "data-mover", path: []string{"datamover"}, value: text,
		usage: "Velero's; Salvor has no data mover (kept, listed as ignored)"},
	{flag: "parallel-files-upload", path: []string{"uploaderConfig", "parallelFilesUpload"}, value: integer,
		usage: "Velero's; Salvor has no file-system uploader (kept, listed as ignored)"},
	{flag: "resource-policies-configmap", path: []string{"resourcePolicy"}, value: configMapRef,
		usage: "Velero's; Salvor has no resource policies: the backup fails validation"},
	{flag: "or-selector", path: []string{"orLabelSelectors"}, value: orSelectors,
		usage: "Velero's; Salvor selects by one --selector: the backup fails validation"},
	{flag: "ordered-resources", path: []string{"orderedResources"}, value: ordered,
		usage: "Velero's; Salvor writes items in its own order: the backup fails validation"},
	{flag: "include-cluster-scoped-resources", path: []string{"includedClusterScopedResources"}, value: list,
		usage: "Velero's; use --include-resources and --include-cluster-resources: the backup fails validation"},
	{flag: "exclude-cluster-scoped-resources", path: []string{"excludedClusterScopedResources"}, value: list,
		usage: "Velero's; use --exclude-resources: the backup fails validation"},
	{flag: "include-namespace-scoped-resources", path: []string{"includedNamespaceScopedResources"}, value: list,
		usage: "Velero's; use --include-resources: the backup fails validation"},
	{flag: "exclude-namespace-scoped-resources", path: []string{"excludedNamespaceScopedResources"}, value: list,
		usage: "Velero's; use --exclude-resources: the backup fails validation"},
}

// addVeleroFlags binds Velero's flags for fields Salvor's spec has not.
func addVeleroFlags(f *pflag.FlagSet) {
	for _, v := range veleroFlags {
		f.String(v.flag, "", v.usage)
		if v.bool {
			f.Lookup(v.flag).NoOptDefVal = "true"
		}
	}
}

// VeleroFields are the fields Velero's flags given on the command line
// set, by their path under the spec (a Schedule's: under spec.template).
func (o *SpecFlags) VeleroFields() (map[string]any, error) {
	out := map[string]any{}
	for _, v := range veleroFlags {
		if o.flags == nil || !o.flags.Changed(v.flag) {
			continue
		}
		raw := o.flags.Lookup(v.flag).Value.String()
		val, err := v.value(raw)
		if err != nil {
			return nil, fmt.Errorf("--%s=%q: %w", v.flag, raw, err)
		}
		out[strings.Join(v.path, ".")] = val
	}
	return out, nil
}

func duration(s string) (any, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return nil, err
	}
	return d.String(), nil
}

func boolean(s string) (any, error) { return strconv.ParseBool(s) }

func integer(s string) (any, error) {
	n, err := strconv.Atoi(s)
	return int64(n), err
}

func text(s string) (any, error) { return s, nil }

func list(s string) (any, error) {
	var out []any
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out, nil
}

func configMapRef(s string) (any, error) {
	return map[string]any{"kind": "configmap", "name": s}, nil
}

// orSelectors reads Velero's "a=b or c=d" into its orLabelSelectors.
func orSelectors(s string) (any, error) {
	var out []any
	for _, part := range strings.Split(s, " or ") {
		sel, err := metav1.ParseToLabelSelector(strings.TrimSpace(part))
		if err != nil {
			return nil, err
		}
		var m map[string]any
		raw, _ := json.Marshal(sel)
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// ordered reads Velero's "pods=ns/a,ns/b;persistentvolumeclaims=ns/c".
func ordered(s string) (any, error) {
	out := map[string]any{}
	for _, entry := range strings.Split(s, ";") {
		kind, names, ok := strings.Cut(entry, "=")
		if !ok || kind == "" || names == "" {
			return nil, fmt.Errorf("want RESOURCE=NS/NAME,NS/NAME;RESOURCE=NS/NAME")
		}
		out[kind] = names
	}
	return out, nil
}
