package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BackupPhase is where a Backup is in its life. The values are Velero's.
type BackupPhase string

const (
	BackupPhaseNew                                       BackupPhase = "New"
	BackupPhaseFailedValidation                          BackupPhase = "FailedValidation"
	BackupPhaseInProgress                                BackupPhase = "InProgress"
	BackupPhaseWaitingForPluginOperations                BackupPhase = "WaitingForPluginOperations"
	BackupPhaseWaitingForPluginOperationsPartiallyFailed BackupPhase = "WaitingForPluginOperationsPartiallyFailed"
	BackupPhaseFinalizing                                BackupPhase = "Finalizing"
	BackupPhaseFinalizingPartiallyFailed                 BackupPhase = "FinalizingPartiallyFailed"
	BackupPhaseCompleted                                 BackupPhase = "Completed"
	BackupPhasePartiallyFailed                           BackupPhase = "PartiallyFailed"
	BackupPhaseFailed                                    BackupPhase = "Failed"
	BackupPhaseDeleting                                  BackupPhase = "Deleting"
)

// BackupSpec says what to back up and where.
type BackupSpec struct {
	// IncludedNamespaces lists the namespaces to back up, by name or by
	// pattern (* any run of characters, ? one, [abc] or [a-z] one of a set,
	// as Velero's); empty or "*" means all.
	// +optional
	IncludedNamespaces []string `json:"includedNamespaces,omitempty"`
	// ExcludedNamespaces lists namespaces to leave out, by name or by pattern.
	// +optional
	ExcludedNamespaces []string `json:"excludedNamespaces,omitempty"`
	// IncludedResources lists resources (e.g. "configmaps", "deployments.apps"); empty or "*" means all.
	// +optional
	IncludedResources []string `json:"includedResources,omitempty"`
	// ExcludedResources lists resources to leave out.
	// +optional
	ExcludedResources []string `json:"excludedResources,omitempty"`
	// IncludeClusterResources says whether cluster-scoped resources are backed up;
	// unset means "those related to the namespaced items".
	// +optional
	// +nullable
	IncludeClusterResources *bool `json:"includeClusterResources,omitempty"`

	// IncludedNamespaceScopedResources, ExcludedNamespaceScopedResources,
	// IncludedClusterScopedResources and ExcludedClusterScopedResources
	// choose resources one scope at a time (Velero's fields), in place of
	// includedResources, excludedResources and includeClusterResources:
	// a backup uses one way or the other. Namespaced resources are all
	// backed up unless named in the excluded list or left out of a
	// non-empty included one. Cluster-scoped ones are backed up when
	// named in the included list ("*" for all), or, with neither list
	// given, in a backup of every namespace and every namespaced
	// resource; those a namespaced item needs (a claim's volume, a
	// service account's cluster roles) come unless excluded.
	// +optional
	IncludedNamespaceScopedResources []string `json:"includedNamespaceScopedResources,omitempty"`
	// +optional
	ExcludedNamespaceScopedResources []string `json:"excludedNamespaceScopedResources,omitempty"`
	// +optional
	IncludedClusterScopedResources []string `json:"includedClusterScopedResources,omitempty"`
	// +optional
	ExcludedClusterScopedResources []string `json:"excludedClusterScopedResources,omitempty"`

	// Strict fails validation when includedNamespaces or excludedNamespaces
	// names a namespace the cluster does not have (or has a pattern that
	// matches none of its namespaces); otherwise such a name is
	// a warning on the backup (a typo would silently back up nothing).
	// Salvor's addition.
	// +optional
	Strict bool `json:"strict,omitempty"`
	// LabelSelector selects items by label.
	// +optional
	// +nullable
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// OrLabelSelectors selects the items whose labels match any of them
	// (Velero's field); not with labelSelector.
	// +optional
	// +nullable
	OrLabelSelectors []*metav1.LabelSelector `json:"orLabelSelectors,omitempty"`
	// StorageLocation names the BackupStorageLocation to write to; empty means the default.
	// +optional
	StorageLocation string `json:"storageLocation,omitempty"`
	// TTL is how long the backup is kept before it expires.
	// +optional
	TTL metav1.Duration `json:"ttl,omitempty"`
	// ItemOperationTimeout bounds every long-running plugin operation of this backup.
	// +optional
	ItemOperationTimeout metav1.Duration `json:"itemOperationTimeout,omitempty"`
	// Timeout bounds the whole backup; zero means no limit.
	// +optional
	Timeout metav1.Duration `json:"timeout,omitempty"`
	// VolumeGroupSnapshotLabelKey is the claim label whose value groups
	// volumes to be snapshotted together (Velero 1.17's field; unset:
	// velero.io/volume-group). Salvor takes no VolumeGroupSnapshots: it
	// snapshots a group's claims one by one and warns, per group, that
	// their snapshots are not consistent with each other.
	// +optional
	VolumeGroupSnapshotLabelKey string `json:"volumeGroupSnapshotLabelKey,omitempty"`
	// SnapshotVolumes says whether persistent volumes are snapshotted; unset means yes.
	// +optional
	// +nullable
	SnapshotVolumes *bool `json:"snapshotVolumes,omitempty"`
	// SnapshotMoveData moves the data of the backup's CSI snapshots into
	// the backup storage location (Velero's field): each claim's snapshot
	// is read by a mover pod and uploaded into the location's kopia
	// repository for its namespace, then the snapshot is deleted, so the
	// volume is restored from the bucket alone. Unset means false.
	// +optional
	// +nullable
	SnapshotMoveData *bool `json:"snapshotMoveData,omitempty"`
	// DefaultVolumesToFsBackup copies the files of every volume of the
	// backup's running pods (Velero's file-system backup, by the node agent)
	// but those a pod lists in backup.velero.io/backup-volumes-excludes and
	// those whose data is the cluster's own (secrets, config maps,
	// projected, downward API) or no node agent can read (hostPath, block).
	// Unset means the server's --default-volumes-to-fs-backup; false copies
	// only the volumes a pod lists in backup.velero.io/backup-volumes.
	// +optional
	// +nullable
	DefaultVolumesToFsBackup *bool `json:"defaultVolumesToFsBackup,omitempty"`
	// DataMover names the data mover (Velero's field): empty or "salvor"
	// is Salvor's built-in one ("velero" is taken as the same, so
	// Velero's specs apply unchanged); another name fails validation.
	// +optional
	DataMover string `json:"datamover,omitempty"`
	// ResourcePolicy names a ConfigMap in the backup's namespace whose one
	// key holds resource policies in Velero's format (version v1, Velero's
	// field; kind "configmap"): volumePolicies, whose first match for a
	// volume says skip (its object is kept, its data is not) or snapshot;
	// includeExcludePolicy, resource lists merged under the spec's own
	// per-scope lists; clusterScopedFilterPolicy and
	// namespacedFilterPolicies, label selectors and name patterns per
	// resource, and per namespace, in place of the spec's selectors.
	// +optional
	// +nullable
	ResourcePolicy *corev1.TypedLocalObjectReference `json:"resourcePolicy,omitempty"`
	// OrderedResources backs up the named items of a resource one after
	// another in the order given, each with the items it brings along
	// (Velero's field): the key names a resource (pods, or any name
	// includedResources takes), the value its items, comma-separated, as
	// namespace/name (name alone for a cluster-scoped resource). It orders,
	// it does not select: a named item the backup does not select is left
	// out, and the log says so. The other items are backed up alongside,
	// in no order.
	// +optional
	OrderedResources map[string]string `json:"orderedResources,omitempty"`
	// VolumeSnapshotLocations names the VolumeSnapshotLocation that
	// snapshots the backup's volumes (Velero's field); empty means the
	// default one, or the only one. Salvor snapshots a backup through one
	// location: naming more than one fails validation.
	// +optional
	VolumeSnapshotLocations []string `json:"volumeSnapshotLocations,omitempty"`
	// Hooks run commands in the containers of the pods being backed up,
	// through the API server's pods/exec (Velero's field): each pod's pre
	// hooks before the pod is backed up, its post hooks after the pod and
	// what it brings along (its claims, their snapshots taken). A pod
	// annotated with pre.hook.backup.velero.io/command (or
	// post.hook.backup.velero.io/command) runs that command in place of the
	// spec's hooks for the phase.
	// +optional
	// +nullable
	Hooks *BackupHooks `json:"hooks,omitempty"`
}

// BackupHooks are a backup's hooks.
type BackupHooks struct {
	// +optional
	Resources []BackupResourceHookSpec `json:"resources,omitempty"`
}

// BackupResourceHookSpec selects the backed-up pods that run its hooks:
// those in its namespaces, of its resources (hooks run in pods only, so
// the lists either take pods or leave the hook idle) and matching its
// label selector.
type BackupResourceHookSpec struct {
	// Name names the hook in messages and logs.
	Name string `json:"name"`
	// +optional
	IncludedNamespaces []string `json:"includedNamespaces,omitempty"`
	// +optional
	ExcludedNamespaces []string `json:"excludedNamespaces,omitempty"`
	// +optional
	IncludedResources []string `json:"includedResources,omitempty"`
	// +optional
	ExcludedResources []string `json:"excludedResources,omitempty"`
	// +optional
	// +nullable
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// PreHooks run, in order, before the pod is backed up.
	// +optional
	PreHooks []BackupResourceHook `json:"pre,omitempty"`
	// PostHooks run, in order, after the pod and what it brings along are.
	// +optional
	PostHooks []BackupResourceHook `json:"post,omitempty"`
}

// BackupResourceHook is one hook of a backup.
type BackupResourceHook struct {
	Exec *ExecHook `json:"exec"`
}

// ExecHook is a command run in a container of a pod.
type ExecHook struct {
	// Container is the container the command runs in; empty means the
	// pod's first container.
	// +optional
	Container string `json:"container,omitempty"`
	// Command is the command and its arguments, run without a shell.
	// +kubebuilder:validation:MinItems=1
	Command []string `json:"command"`
	// OnError says what a failure of the command does: Fail (the default)
	// stops the pod's other hooks of the phase and, before the backup,
	// leaves the pod out of it; Continue goes on. Either way the failure is
	// an error of the backup, which ends PartiallyFailed.
	// +optional
	OnError HookErrorMode `json:"onError,omitempty"`
	// Timeout bounds the command; zero means 30s.
	// +optional
	Timeout metav1.Duration `json:"timeout,omitempty"`
}

// HookErrorMode is what a failed hook does.
// +kubebuilder:validation:Enum=Continue;Fail
type HookErrorMode string

const (
	HookErrorModeContinue HookErrorMode = "Continue"
	HookErrorModeFail     HookErrorMode = "Fail"
)

// HookStatus counts the exec hooks a backup or restore ran (Velero's
// status field).
type HookStatus struct {
	// HooksAttempted is how many hooks ran.
	// +optional
	HooksAttempted int `json:"hooksAttempted,omitempty"`
	// HooksFailed is how many of them failed.
	// +optional
	HooksFailed int `json:"hooksFailed,omitempty"`
}

// BackupProgress counts items.
type BackupProgress struct {
	// +optional
	TotalItems int `json:"totalItems,omitempty"`
	// +optional
	ItemsBackedUp int `json:"itemsBackedUp,omitempty"`
}

// BackupStatus is what happened to a Backup.
type BackupStatus struct {
	// +optional
	Phase BackupPhase `json:"phase,omitempty"`
	// +optional
	ValidationErrors []string `json:"validationErrors,omitempty"`
	// +optional
	// +nullable
	StartTimestamp *metav1.Time `json:"startTimestamp,omitempty"`
	// +optional
	// +nullable
	CompletionTimestamp *metav1.Time `json:"completionTimestamp,omitempty"`
	// +optional
	// +nullable
	Expiration *metav1.Time `json:"expiration,omitempty"`
	// +optional
	// +nullable
	Progress *BackupProgress `json:"progress,omitempty"`
	// +optional
	Warnings int `json:"warnings,omitempty"`
	// +optional
	Errors int `json:"errors,omitempty"`
	// +optional
	FailureReason string `json:"failureReason,omitempty"`
	// +optional
	BackupItemOperationsAttempted int `json:"backupItemOperationsAttempted,omitempty"`
	// +optional
	BackupItemOperationsCompleted int `json:"backupItemOperationsCompleted,omitempty"`
	// +optional
	BackupItemOperationsFailed int `json:"backupItemOperationsFailed,omitempty"`
	// +optional
	VolumeSnapshotsAttempted int `json:"volumeSnapshotsAttempted,omitempty"`
	// +optional
	VolumeSnapshotsCompleted int `json:"volumeSnapshotsCompleted,omitempty"`
	// Attempts counts the times the backup was started; a server restart
	// during a backup starts it again, up to a bound.
	// +optional
	Attempts int `json:"attempts,omitempty"`
	// RunningOperations shows the plugin operations still running (at most
	// 50), updated at every poll, for live progress.
	// +optional
	RunningOperations []OperationSummary `json:"runningOperations,omitempty"`
	// FormatVersion is the version of the backup's tarball layout.
	// +optional
	FormatVersion string `json:"formatVersion,omitempty"`
	// DeletionBlocked says why a backup being deleted still waits: a
	// restore or verification that reads it has not ended, or its objects
	// are retained by its location's Object Lock until a time.
	// +optional
	DeletionBlocked string `json:"deletionBlocked,omitempty"`
	// Verification is the outcome of the backup's last verification
	// (`salvor backup verify`, or its schedule's spec.verify).
	// +optional
	// +nullable
	Verification *BackupVerification `json:"verification,omitempty"`
	// HookStatus counts the backup's hooks that ran and that failed.
	// +optional
	// +nullable
	HookStatus *HookStatus `json:"hookStatus,omitempty"`
	// IgnoredFields lists fields of Velero's BackupSpec the backup's spec
	// has that Salvor accepts but does not act on.
	// +optional
	IgnoredFields []string `json:"ignoredFields,omitempty"`
	// Authentication says whether the backup's objects are proven to be
	// the ones its writer stored: its manifest signed with a key of its
	// location (docs/security.md). Recorded when the backup is written or
	// synced, and checked again by every restore.
	// +optional
	// +nullable
	Authentication *BackupAuthentication `json:"authentication,omitempty"`
}

// Authentication states of a backup.
const (
	// AuthenticationAuthenticated: its manifest is signed with a key of
	// its location, for this backup.
	AuthenticationAuthenticated = "Authenticated"
	// AuthenticationUnauthenticated: nothing proves who wrote it (Velero
	// did, or a Salvor without a signing key): restores warn, and trust
	// neither its snapshots nor the hooks in its annotations unless asked.
	AuthenticationUnauthenticated = "Unauthenticated"
	// AuthenticationForged: its signature does not check out; nothing of
	// it is restored.
	AuthenticationForged = "Forged"
)

// BackupAuthentication is what authenticating a backup found.
type BackupAuthentication struct {
	// State is Authenticated, Unauthenticated or Forged.
	State string `json:"state"`
	// KeyID names the key that signed the manifest.
	// +optional
	KeyID string `json:"keyID,omitempty"`
	// Message says what was found.
	// +optional
	Message string `json:"message,omitempty"`
}

// VerificationPhase is where a verification is.
type VerificationPhase string

const (
	VerificationPhaseInProgress VerificationPhase = "InProgress"
	VerificationPhasePassed     VerificationPhase = "Passed"
	VerificationPhaseFailed     VerificationPhase = "Failed"
)

// The result of checking one of a backup's stored objects.
const (
	ObjectOK      = "ok"
	ObjectMissing = "missing"
	ObjectChanged = "changed"
	// ObjectUnchecked: there was nothing to check it against (a backup
	// without a manifest), so it was only read and parsed.
	ObjectUnchecked = "unchecked"
	// ObjectExtra: stored under the backup's name but not in its manifest.
	ObjectExtra = "extra"
)

// BackupVerification is what a verification found: each stored object
// checked against the backup's manifest, the tarball read whole under the
// restore's checks, and optionally a test restore.
type BackupVerification struct {
	// Request is the verify annotation's value this outcome answers.
	// +optional
	Request string `json:"request,omitempty"`
	// +optional
	Phase VerificationPhase `json:"phase,omitempty"`
	// +optional
	// +nullable
	StartTimestamp *metav1.Time `json:"startTimestamp,omitempty"`
	// +optional
	// +nullable
	CompletionTimestamp *metav1.Time `json:"completionTimestamp,omitempty"`
	// Manifest tells whether the backup has a manifest (every backup
	// Salvor writes does); without one — a backup written by Velero —
	// its objects were read and parsed and its item counts compared with
	// its resource list, but no checksum could be checked.
	Manifest bool `json:"manifest"`
	// Authentication is what checking the manifest's signature found.
	// +optional
	// +nullable
	Authentication *BackupAuthentication `json:"authentication,omitempty"`
	// Items is the number of the tarball's items read whole.
	// +optional
	Items int `json:"items,omitempty"`
	// Objects are the backup's stored objects and what was found of each.
	// +optional
	Objects []VerifiedObject `json:"objects,omitempty"`
	// Volumes are the volumes whose data the backup keeps outside its
	// objects (moved into the location, or in a snapshot) and what was
	// found of each: ok, missing, or unchecked saying why.
	// +optional
	Volumes []VerifiedVolume `json:"volumes,omitempty"`
	// Failures say what failed (at most 50).
	// +optional
	Failures []string `json:"failures,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// TestRestore is the outcome of restoring the backup into renamed
	// namespaces, when asked for.
	// +optional
	// +nullable
	TestRestore *TestRestoreOutcome `json:"testRestore,omitempty"`
}

// VerifiedVolume is one volume's data kept by a backup and what was
// found of it.
type VerifiedVolume struct {
	// Name is the volume as the backup holds it: "claim NAMESPACE/NAME"
	// or "persistentvolume NAME".
	Name string `json:"name"`
	// Kind is how its data is kept: moved data, CSI snapshot or
	// VolumeSnapshotter snapshot.
	Kind string `json:"kind"`
	// Result is ok, missing or unchecked.
	Result string `json:"result"`
	// +optional
	Detail string `json:"detail,omitempty"`
}

// VerifiedObject is one stored object of a backup and what was found.
type VerifiedObject struct {
	// Name is the object's name inside the backup's directory.
	Name string `json:"name"`
	// Result is ok, missing, changed, unchecked or extra.
	Result string `json:"result"`
	// +optional
	Detail string `json:"detail,omitempty"`
}

// TestRestoreOutcome is a restore of a backup into namespaces renamed
// <prefix>-<namespace>, compared with the backup and then deleted.
type TestRestoreOutcome struct {
	Prefix string `json:"prefix"`
	// Restore is the Restore that did it.
	// +optional
	Restore string `json:"restore,omitempty"`
	// RestorePhase is the phase it ended in.
	// +optional
	RestorePhase string `json:"restorePhase,omitempty"`
	// Namespaces are the namespaces it restored into.
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`
	// Compared counts the restored objects compared with the backup;
	// Identical those equal to it, apart from what the API server owns.
	// +optional
	Compared int `json:"compared,omitempty"`
	// +optional
	Identical int `json:"identical,omitempty"`
	// Differing names the objects that differ and the fields (at most 50).
	// +optional
	Differing []string `json:"differing,omitempty"`
	// NotRestored counts the backup's items in those namespaces that the
	// restore left out (by its rules, e.g. token Secrets); the restore's
	// results say why.
	// +optional
	NotRestored int `json:"notRestored,omitempty"`
	// Neutralized says what the test restore changed or left out so that
	// its copies run nothing and take no traffic: workloads scaled to zero
	// or suspended, load balancers, node ports and external IPs dropped,
	// ingresses not restored (at most 50 lines); each namespace also gets a
	// deny-all NetworkPolicy.
	// +optional
	Neutralized []string `json:"neutralized,omitempty"`
	// CleanedUp tells whether the namespaces were deleted.
	// +optional
	CleanedUp bool `json:"cleanedUp,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// OperationSummary is one running plugin operation, as progress bars show it.
type OperationSummary struct {
	Plugin      string `json:"plugin"`
	Item        string `json:"item"`
	OperationID string `json:"operationID"`
	// +optional
	NCompleted int64 `json:"nCompleted,omitempty"`
	// +optional
	NTotal int64 `json:"nTotal,omitempty"`
	// +optional
	Units string `json:"units,omitempty"`
	// +optional
	Description string `json:"description,omitempty"`
	// Phase is the operation's phase at the last poll.
	// +optional
	Phase string `json:"phase,omitempty"`
	// Updated is when the plugin last reported progress.
	// +optional
	// +nullable
	Updated *metav1.Time `json:"updated,omitempty"`
}

// Backup is a request to back up a cluster's objects and volumes, and its result.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Items",type=integer,JSONPath=`.status.progress.itemsBackedUp`
// +kubebuilder:printcolumn:name="Total",type=integer,JSONPath=`.status.progress.totalItems`
// +kubebuilder:printcolumn:name="Location",type=string,JSONPath=`.spec.storageLocation`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Backup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec keeps fields of Velero's spec that Salvor's has not, so a
	// Velero Backup applies with only its apiVersion changed: the backup
	// fails validation when one would change what is backed up, and
	// status.ignoredFields lists the others.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Spec BackupSpec `json:"spec,omitempty"`
	// +optional
	Status BackupStatus `json:"status,omitempty"`
}

// BackupList is a list of Backups.
//
// +kubebuilder:object:root=true
type BackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Backup `json:"items"`
}
