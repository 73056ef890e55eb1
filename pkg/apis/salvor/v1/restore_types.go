package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// RestorePhase is where a Restore is in its life. The values are Velero's.
type RestorePhase string

const (
	RestorePhaseNew                                       RestorePhase = "New"
	RestorePhaseFailedValidation                          RestorePhase = "FailedValidation"
	RestorePhaseInProgress                                RestorePhase = "InProgress"
	RestorePhaseWaitingForPluginOperations                RestorePhase = "WaitingForPluginOperations"
	RestorePhaseWaitingForPluginOperationsPartiallyFailed RestorePhase = "WaitingForPluginOperationsPartiallyFailed"
	RestorePhaseFinalizing                                RestorePhase = "Finalizing"
	RestorePhaseFinalizingPartiallyFailed                 RestorePhase = "FinalizingPartiallyFailed"
	RestorePhaseCompleted                                 RestorePhase = "Completed"
	RestorePhasePartiallyFailed                           RestorePhase = "PartiallyFailed"
	RestorePhaseFailed                                    RestorePhase = "Failed"
)

// ExistingResourcePolicy says what a restore does with an object that is already there.
// +kubebuilder:validation:Enum=none;update
type ExistingResourcePolicy string

const (
	ExistingResourcePolicyNone   ExistingResourcePolicy = "none"
	ExistingResourcePolicyUpdate ExistingResourcePolicy = "update"
)

// RestoreSpec says which backup to restore and what of it.
type RestoreSpec struct {
	// BackupName is the Backup to restore from. Either it or ScheduleName
	// is given; when both are, BackupName is the one restored.
	// +optional
	BackupName string `json:"backupName,omitempty"`
	// ScheduleName restores from the Schedule's newest Completed backup
	// (Velero's field): the server picks it when the restore starts and
	// records it in BackupName.
	// +optional
	ScheduleName string `json:"scheduleName,omitempty"`
	// IncludedNamespaces lists the backup's namespaces to restore, by name
	// or by pattern (* any run of characters, ? one, [abc] or [a-z] one of a
	// set, as Velero's); empty or "*" means all.
	// +optional
	IncludedNamespaces []string `json:"includedNamespaces,omitempty"`
	// ExcludedNamespaces lists namespaces to leave out, by name or by pattern.
	// +optional
	ExcludedNamespaces []string `json:"excludedNamespaces,omitempty"`
	// +optional
	IncludedResources []string `json:"includedResources,omitempty"`
	// +optional
	ExcludedResources []string `json:"excludedResources,omitempty"`
	// IncludeClusterResources says whether cluster-scoped items are
	// restored (Velero's field): true always; false never; unset only when
	// the restore includes every namespace, or when a restored namespaced
	// item needs them (a claim's volume, a custom resource's definition).
	// +optional
	// +nullable
	IncludeClusterResources *bool `json:"includeClusterResources,omitempty"`

	// Strict fails validation when includedNamespaces, excludedNamespaces
	// or a namespaceMapping names a namespace the backup does not hold (or
	// has a pattern that matches none);
	// otherwise such a name is a warning on the restore. Salvor's addition.
	// +optional
	Strict bool `json:"strict,omitempty"`
	// +optional
	// +nullable
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// OrLabelSelectors restores the items whose labels match any of them
	// (Velero's field); not with labelSelector.
	// +optional
	// +nullable
	OrLabelSelectors []*metav1.LabelSelector `json:"orLabelSelectors,omitempty"`
	// NamespaceMapping restores items of the key namespace into the value namespace.
	// +optional
	NamespaceMapping map[string]string `json:"namespaceMapping,omitempty"`
	// +optional
	ExistingResourcePolicy ExistingResourcePolicy `json:"existingResourcePolicy,omitempty"`
	// DryRun runs the whole restore — filters, mappings, ordering,
	// RestoreItemAction Execute, the existing-resource policy — but sends
	// every write as a server-side dry run, so nothing is written and no
	// plugin operation is started. Its results say, for every item, what
	// the restore would do.
	// +optional
	DryRun bool `json:"dryRun,omitempty"`
	// RestorePVs says whether volumes are recreated from their snapshots; unset means yes.
	// +optional
	// +nullable
	RestorePVs *bool `json:"restorePVs,omitempty"`
	// TrustBackupSnapshots makes volumes from the snapshots a backup's
	// files name even when this cluster holds no record of taking them: a
	// backup synced from its location (another cluster's, or Velero's).
	// Whoever can write to the bucket can name there any snapshot the
	// snapshotter reaches, another team's included: set it only for a
	// location whose bucket no one else can write. Without it, such a
	// volume is not made, and the restore says so, naming it.
	// +optional
	TrustBackupSnapshots bool `json:"trustBackupSnapshots,omitempty"`
	// PreserveNodePorts keeps every Service node port the backup holds
	// (Velero's field). Unset or false keeps only the ports someone set
	// (kubectl apply's last-applied configuration, or a field manager that
	// owns the field) and lets the cluster assign the others anew.
	// +optional
	// +nullable
	PreserveNodePorts *bool `json:"preserveNodePorts,omitempty"`
	// +optional
	ItemOperationTimeout metav1.Duration `json:"itemOperationTimeout,omitempty"`
	// Hooks are Velero's restore hooks for the pods the restore makes:
	// init containers, put before the pod's own, and commands run in the
	// pod's containers once they are up (the server needs the right to
	// run them: salvor install --exec-hooks). The spec's hooks win over a
	// pod's annotations (init.hook.restore.velero.io/*,
	// post.hook.restore.velero.io/*) of their kind; see AnnotationHooks.
	// +optional
	// +nullable
	Hooks *RestoreHooks `json:"hooks,omitempty"`
	// AnnotationHooks says whether the hooks restored pods' annotations
	// ask for run (for a pod no hook of the spec selects): true always,
	// false never; unset, only for backups this cluster made, not for
	// backups synced from their location, whose annotations anyone who can
	// write to the bucket may have written.
	// +optional
	AnnotationHooks *bool `json:"annotationHooks,omitempty"`
	// ResourceModifier names a ConfigMap in the restore's namespace whose
	// one key holds resource modifier rules in Velero's format (version v1):
	// JSON, merge or strategic merge patches applied to the items each
	// rule's conditions select, before they are created (Velero's field;
	// kind "configmap"). A rule may change what an item holds, never which
	// item it is (apiVersion, kind, namespace, name).
	// +optional
	// +nullable
	ResourceModifier *corev1.TypedLocalObjectReference `json:"resourceModifier,omitempty"`
	// ResourcePolicy names a ConfigMap in the restore's namespace whose one
	// key holds resource policies in Velero's format (version v1, Velero's
	// field; kind "configmap"). A restore takes their filter policies:
	// clusterScopedFilterPolicy and namespacedFilterPolicies, label
	// selectors and name patterns per resource, and per namespace of the
	// backup, in place of the spec's selectors; within what the spec's
	// namespace and resource lists select. Volume policies and
	// includeExcludePolicy are a backup's, and fail validation here.
	// +optional
	// +nullable
	ResourcePolicy *corev1.TypedLocalObjectReference `json:"resourcePolicy,omitempty"`
	// RestoreStatus picks the resources whose items get the status the
	// backup holds back (Velero's field): an item made by the restore is
	// created without status, as any other, then given its backed-up
	// status through the API. Unset restores no item's status; set with
	// empty includedResources, every resource's but those excluded. An
	// item's annotation velero.io/restore-status ("true" or "false") wins
	// over these lists, as in Velero. Items that already exist keep theirs.
	// +optional
	// +nullable
	RestoreStatus *RestoreStatusSpec `json:"restoreStatus,omitempty"`
}

// RestoreStatusSpec lists the resources whose items' status a restore
// restores (Velero's type), by the names includedResources takes.
type RestoreStatusSpec struct {
	// IncludedResources are the resources whose items get their status
	// back; empty or "*" means all.
	// +optional
	// +nullable
	IncludedResources []string `json:"includedResources,omitempty"`
	// ExcludedResources are left out even when included.
	// +optional
	// +nullable
	ExcludedResources []string `json:"excludedResources,omitempty"`
}

// RestoreProgress counts items.
type RestoreProgress struct {
	// +optional
	TotalItems int `json:"totalItems,omitempty"`
	// +optional
	ItemsRestored int `json:"itemsRestored,omitempty"`
}

// RestoreHooks are a restore's hooks.
type RestoreHooks struct {
	// +optional
	Resources []RestoreResourceHookSpec `json:"resources,omitempty"`
}

// RestoreResourceHookSpec selects the restored pods that get its hooks:
// those in its namespaces (after namespace mapping) whose labels match.
type RestoreResourceHookSpec struct {
	// Name names the hook in messages.
	Name string `json:"name"`
	// +optional
	IncludedNamespaces []string `json:"includedNamespaces,omitempty"`
	// +optional
	ExcludedNamespaces []string `json:"excludedNamespaces,omitempty"`
	// IncludedResources and ExcludedResources are kept as Velero has
	// them; hooks apply to pods only, as in Velero.
	// +optional
	IncludedResources []string `json:"includedResources,omitempty"`
	// +optional
	ExcludedResources []string `json:"excludedResources,omitempty"`
	// +optional
	// +nullable
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// +optional
	PostHooks []RestoreResourceHook `json:"postHooks,omitempty"`
}

// RestoreResourceHook is one hook: init containers put into the restored
// pod, or a command run in one of its containers once it is up.
type RestoreResourceHook struct {
	// +optional
	// +nullable
	Exec *ExecRestoreHook `json:"exec,omitempty"`
	// +optional
	// +nullable
	Init *InitRestoreHook `json:"init,omitempty"`
}

// ExecRestoreHook is a command run in a restored pod's container once the
// container is running (or ready), through pods/exec (Velero's type). The
// restore waits for it; a failure is an error of the restore.
type ExecRestoreHook struct {
	// Container is the container the command runs in; empty means the
	// pod's first container. A pod without it is restored without the
	// hook, with a warning (as in Velero).
	// +optional
	Container string `json:"container,omitempty"`
	// Command is the command and its arguments, run without a shell.
	// +kubebuilder:validation:MinItems=1
	Command []string `json:"command"`
	// OnError says what a failure does: Fail (the default) leaves the
	// pod's hooks after it unrun; Continue goes on. Either way the failure
	// is an error of the restore, which ends PartiallyFailed.
	// +optional
	OnError HookErrorMode `json:"onError,omitempty"`
	// ExecTimeout bounds the command; zero means 30s.
	// +optional
	ExecTimeout metav1.Duration `json:"execTimeout,omitempty"`
	// WaitTimeout bounds the wait for the container to be up, from the
	// pod's creation; zero means the server's --restore-hook-wait-timeout
	// (10m by default).
	// +optional
	WaitTimeout metav1.Duration `json:"waitTimeout,omitempty"`
	// WaitForReady waits for the container to be ready, not only running.
	// +optional
	// +nullable
	WaitForReady *bool `json:"waitForReady,omitempty"`
}

// InitRestoreHook adds init containers to a restored pod.
type InitRestoreHook struct {
	// InitContainers are containers as a pod spec has them; each needs a
	// name, an image and a command.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	InitContainers []runtime.RawExtension `json:"initContainers,omitempty"`
	// Timeout is kept as Velero has it; neither Velero nor Salvor bounds
	// the init containers by it.
	// +optional
	Timeout metav1.Duration `json:"timeout,omitempty"`
}

// RestoreStatus is what happened to a Restore.
type RestoreStatus struct {
	// +optional
	Phase RestorePhase `json:"phase,omitempty"`
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
	Progress *RestoreProgress `json:"progress,omitempty"`
	// +optional
	Warnings int `json:"warnings,omitempty"`
	// +optional
	Errors int `json:"errors,omitempty"`
	// +optional
	FailureReason string `json:"failureReason,omitempty"`
	// HookStatus counts the exec hooks the restore ran in the pods it
	// made (Velero's field); unset when it ran none.
	// +optional
	// +nullable
	HookStatus *HookStatus `json:"hookStatus,omitempty"`
	// Attempts counts the times the restore was started; a server restart
	// during a restore starts it again, up to a bound, so a restore that
	// brings the server down does not do so for ever.
	// +optional
	Attempts int `json:"attempts,omitempty"`
	// +optional
	RestoreItemOperationsAttempted int `json:"restoreItemOperationsAttempted,omitempty"`
	// +optional
	RestoreItemOperationsCompleted int `json:"restoreItemOperationsCompleted,omitempty"`
	// +optional
	RestoreItemOperationsFailed int `json:"restoreItemOperationsFailed,omitempty"`
	// DryRun counts what a dry run found the restore would do, item by
	// item (the restore's results list each item).
	// +optional
	// +nullable
	DryRun *DryRunSummary `json:"dryRun,omitempty"`
	// Outcomes counts what became of a restore's items once its pass
	// ended (not for a dry run): its resource list, counted.
	// +optional
	// +nullable
	Outcomes *RestoreOutcomes `json:"outcomes,omitempty"`
	// IgnoredFields lists fields of Velero's RestoreSpec the restore's spec
	// has that Salvor accepts but does not act on.
	// +optional
	IgnoredFields []string `json:"ignoredFields,omitempty"`
}

// RestoreOutcomes counts a restore's items by what became of them, as its
// resource list names each one's.
type RestoreOutcomes struct {
	Created int `json:"created"`
	Updated int `json:"updated"`
	// Skipped: there already (identical, or left as it is), or left out
	// by a plugin or a rule.
	Skipped int `json:"skipped"`
	Failed  int `json:"failed"`
}

// DryRunSummary counts a dry-run restore's items by what restoring them
// would do.
type DryRunSummary struct {
	// WouldCreate: not in the cluster; the API server accepted the create
	// as a dry run (or could not check it, its namespace or resource being
	// made by the same restore: see the item's detail).
	WouldCreate int `json:"wouldCreate"`
	// Identical: in the cluster already, as the backup has it.
	Identical int `json:"identical"`
	// Differs: in the cluster, different from the backup (the item names
	// the fields); left as it is, or updated with existingResourcePolicy
	// update.
	Differs int `json:"differs"`
	// Skipped: left out by a plugin or by the restore's rules.
	Skipped int `json:"skipped"`
	// WouldFail: the API server (or a plugin) refused it.
	WouldFail int `json:"wouldFail"`
}

// The outcomes of a dry-run restore's items.
const (
	DryRunWouldCreate = "would-create"
	DryRunIdentical   = "identical"
	DryRunDiffers     = "differs"
	DryRunSkipped     = "skipped"
	DryRunWouldFail   = "would-fail"
)

// Restore is a request to bring back objects and volumes from a Backup, and its result.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Backup",type=string,JSONPath=`.spec.backupName`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Items",type=integer,JSONPath=`.status.progress.itemsRestored`
// +kubebuilder:printcolumn:name="Total",type=integer,JSONPath=`.status.progress.totalItems`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Restore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec keeps fields of Velero's spec that Salvor's has not, so a
	// Velero Restore applies with only its apiVersion changed: the restore
	// fails validation when one would change what is restored, and
	// status.ignoredFields lists the others.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Spec RestoreSpec `json:"spec,omitempty"`
	// +optional
	Status RestoreStatus `json:"status,omitempty"`
}

// RestoreList is a list of Restores.
//
// +kubebuilder:object:root=true
type RestoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Restore `json:"items"`
}
