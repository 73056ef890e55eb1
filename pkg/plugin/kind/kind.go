package kind

import (
	"fmt"
	"maps"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Kind names a plugin kind and version, as on the wire.
type Kind string

const (
	ObjectStore         Kind = "ObjectStore"
	VolumeSnapshotter   Kind = "VolumeSnapshotter"
	VolumeSnapshotterV2 Kind = "VolumeSnapshotterV2"
	BackupItemAction    Kind = "BackupItemAction"
	BackupItemActionV2  Kind = "BackupItemActionV2"
	RestoreItemAction   Kind = "RestoreItemAction"
	RestoreItemActionV2 Kind = "RestoreItemActionV2"
	DeleteItemAction    Kind = "DeleteItemAction"
	// PluginLister is internal: every binary serves it so the host can ask
	// what else the binary serves.
	PluginLister Kind = "PluginLister"
)

// Descriptor is everything the rest of Salvor needs to know about a kind.
type Descriptor struct {
	Kind Kind
	// Service is the full gRPC service name, e.g. "v2.BackupItemAction".
	Service string
	// OfferedAs is the newer kind a plugin of this kind is also offered as on
	// the host, through an adapter; empty for the newest version of a kind.
	OfferedAs Kind
	// Stateful kinds are configured by an Init call whose config the host
	// replays when it restarts the plugin's process.
	Stateful bool
	// Methods are the service's methods, by name.
	Methods map[string]Method
}

// Method is what the host needs to know about one method of a kind.
type Method struct {
	// Timeout is the default deadline of its calls.
	Timeout time.Duration
	// ReadOnly methods change nothing in the plugin or the world, so the
	// host may send one again to a restarted process when the process died
	// under it.
	ReadOnly bool
}

func reads(t time.Duration) Method  { return Method{Timeout: t, ReadOnly: true} }
func writes(t time.Duration) Method { return Method{Timeout: t} }

var (
	quick    = 30 * time.Second
	standard = time.Minute
	long     = 5 * time.Minute
)

// with returns base and extra's methods together.
func with(base map[string]Method, extra ...map[string]Method) map[string]Method {
	out := maps.Clone(base)
	for _, e := range extra {
		maps.Copy(out, e)
	}
	return out
}

var (
	action      = map[string]Method{"AppliesTo": reads(quick), "Execute": writes(long)}
	operations  = map[string]Method{"Progress": reads(standard), "Cancel": writes(standard)}
	snapshotter = map[string]Method{
		"Init":                     reads(standard),
		"CreateVolumeFromSnapshot": writes(30 * time.Minute),
		"GetVolumeInfo":            reads(standard),
		"CreateSnapshot":           writes(30 * time.Minute),
		"DeleteSnapshot":           writes(10 * time.Minute),
		"GetVolumeID":              reads(standard),
		"SetVolumeID":              reads(standard),
	}
)

var table = []Descriptor{
	{Kind: PluginLister, Service: "generated.PluginLister", Methods: map[string]Method{"ListPlugins": reads(quick)}},
	{Kind: ObjectStore, Service: "generated.ObjectStore", Stateful: true, Methods: map[string]Method{
		"Init": reads(standard), "PutObject": writes(time.Hour), "ObjectExists": reads(2 * time.Minute),
		"GetObject": reads(time.Hour), "ListCommonPrefixes": reads(2 * time.Minute), "ListObjects": reads(2 * time.Minute),
		"DeleteObject": writes(2 * time.Minute), "CreateSignedURL": reads(standard),
	}},
	{Kind: VolumeSnapshotter, Service: "generated.VolumeSnapshotter", OfferedAs: VolumeSnapshotterV2, Stateful: true, Methods: snapshotter},
	{Kind: VolumeSnapshotterV2, Service: "v2.VolumeSnapshotter", Stateful: true, Methods: with(snapshotter, operations)},
	{Kind: BackupItemAction, Service: "generated.BackupItemAction", OfferedAs: BackupItemActionV2, Methods: action},
	{Kind: BackupItemActionV2, Service: "v2.BackupItemAction", Methods: with(action, operations)},
	{Kind: RestoreItemAction, Service: "generated.RestoreItemAction", OfferedAs: RestoreItemActionV2, Methods: action},
	{Kind: RestoreItemActionV2, Service: "v2.RestoreItemAction", Methods: with(action, operations, map[string]Method{
		"AreAdditionalItemsReady": reads(standard),
	})},
	{Kind: DeleteItemAction, Service: "generated.DeleteItemAction", Methods: action},
}

// All returns every kind's descriptor, PluginLister first.
func All() []Descriptor { return append([]Descriptor(nil), table...) }

// Lookup returns the descriptor of k.
func Lookup(k Kind) (Descriptor, bool) {
	for _, d := range table {
		if d.Kind == k {
			return d, true
		}
	}
	return Descriptor{}, false
}

// ForMethod returns the descriptor of the kind that serves a full gRPC
// method path such as "/v2.BackupItemAction/Execute", and the method's name.
func ForMethod(fullMethod string) (Descriptor, string, bool) {
	svc, method, ok := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
	if !ok {
		return Descriptor{}, "", false
	}
	for _, d := range table {
		if d.Service == svc {
			return d, method, true
		}
	}
	return Descriptor{}, "", false
}

// Timeout returns the default deadline of a method of this kind; an unknown
// method gets a minute.
func (d Descriptor) Timeout(method string) time.Duration {
	if m, ok := d.Methods[method]; ok {
		return m.Timeout
	}
	return standard
}

// Retryable tells whether a call of method may be repeated after the
// plugin's process died during it.
func (d Descriptor) Retryable(method string) bool { return d.Methods[method].ReadOnly }

var localName = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)

// ValidateName checks a plugin name: "<DNS-1123 subdomain>/<name>", such as
// "example.io/my-action".
func ValidateName(name string) error {
	prefix, rest, ok := strings.Cut(name, "/")
	if !ok || strings.Contains(rest, "/") {
		return fmt.Errorf("plugin name %q must be of the form <domain>/<name>, e.g. example.io/my-action", name)
	}
	if errs := validation.IsDNS1123Subdomain(prefix); len(errs) > 0 {
		return fmt.Errorf("plugin name %q: prefix %q is not a DNS-1123 subdomain: %s", name, prefix, strings.Join(errs, "; "))
	}
	if !localName.MatchString(rest) {
		return fmt.Errorf("plugin name %q: %q after the slash must be letters, digits, '-', '_' or '.', starting and ending with a letter or digit", name, rest)
	}
	return nil
}
