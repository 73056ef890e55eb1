package kind

import (
	"fmt"
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
	// Timeouts is the default deadline of each method's calls.
	Timeouts map[string]time.Duration
}

// readOnly methods change nothing in the plugin or the world, so the host
// may send one again to a restarted process when the process died under it.
var readOnly = map[string]bool{
	"AppliesTo": true, "Progress": true, "AreAdditionalItemsReady": true, "ListPlugins": true,
	"ObjectExists": true, "GetObject": true, "ListCommonPrefixes": true, "ListObjects": true,
	"CreateSignedURL": true, "GetVolumeInfo": true, "GetVolumeID": true, "SetVolumeID": true, "Init": true,
}

// Retryable tells whether a call of method may be repeated after the
// plugin's process died during it.
func (d Descriptor) Retryable(method string) bool { return readOnly[method] }

var (
	quick    = 30 * time.Second
	standard = time.Minute
	long     = 5 * time.Minute
)

func actionTimeouts(extra map[string]time.Duration) map[string]time.Duration {
	t := map[string]time.Duration{"AppliesTo": quick, "Execute": long}
	for k, v := range extra {
		t[k] = v
	}
	return t
}

func snapshotterTimeouts(extra map[string]time.Duration) map[string]time.Duration {
	t := map[string]time.Duration{
		"Init":                     standard,
		"CreateVolumeFromSnapshot": 30 * time.Minute,
		"GetVolumeInfo":            standard,
		"CreateSnapshot":           30 * time.Minute,
		"DeleteSnapshot":           10 * time.Minute,
		"GetVolumeID":              standard,
		"SetVolumeID":              standard,
	}
	for k, v := range extra {
		t[k] = v
	}
	return t
}

var operations = map[string]time.Duration{"Progress": standard, "Cancel": standard}

var table = []Descriptor{
	{Kind: PluginLister, Service: "generated.PluginLister", Timeouts: map[string]time.Duration{"ListPlugins": quick}},
	{Kind: ObjectStore, Service: "generated.ObjectStore", Stateful: true, Timeouts: map[string]time.Duration{
		"Init": standard, "PutObject": time.Hour, "ObjectExists": 2 * time.Minute, "GetObject": time.Hour,
		"ListCommonPrefixes": 2 * time.Minute, "ListObjects": 2 * time.Minute, "DeleteObject": 2 * time.Minute,
		"CreateSignedURL": standard,
	}},
	{Kind: VolumeSnapshotter, Service: "generated.VolumeSnapshotter", OfferedAs: VolumeSnapshotterV2, Stateful: true,
		Timeouts: snapshotterTimeouts(nil)},
	{Kind: VolumeSnapshotterV2, Service: "v2.VolumeSnapshotter", Stateful: true, Timeouts: snapshotterTimeouts(operations)},
	{Kind: BackupItemAction, Service: "generated.BackupItemAction", OfferedAs: BackupItemActionV2, Timeouts: actionTimeouts(nil)},
	{Kind: BackupItemActionV2, Service: "v2.BackupItemAction", Timeouts: actionTimeouts(operations)},
	{Kind: RestoreItemAction, Service: "generated.RestoreItemAction", OfferedAs: RestoreItemActionV2, Timeouts: actionTimeouts(nil)},
	{Kind: RestoreItemActionV2, Service: "v2.RestoreItemAction", Timeouts: actionTimeouts(map[string]time.Duration{
		"Progress": standard, "Cancel": standard, "AreAdditionalItemsReady": standard,
	})},
	{Kind: DeleteItemAction, Service: "generated.DeleteItemAction", Timeouts: actionTimeouts(nil)},
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
	if t, ok := d.Timeouts[method]; ok {
		return t
	}
	return standard
}

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
