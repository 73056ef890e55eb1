package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// UploaderKopia is the one uploader Salvor's file-system backup runs
// (Velero's uploaderType "kopia"; its older "restic" is not one).
const UploaderKopia = "kopia"

// PodVolumeBackupSpec says which volume of which pod, on which node, goes
// into which location's repository (Velero's field names).
type PodVolumeBackupSpec struct {
	// Node is where the pod runs: that node's agent does the backup.
	Node string `json:"node"`
	// Pod is the pod whose volume is read (namespace, name and uid).
	Pod corev1.ObjectReference `json:"pod"`
	// Volume is the name of the volume in the pod's spec.
	Volume string `json:"volume"`
	// BackupStorageLocation is the location, in the PodVolumeBackup's
	// namespace, whose kopia repository for the pod's namespace receives
	// the files.
	BackupStorageLocation string `json:"backupStorageLocation"`
	// RepoIdentifier names the repository as Velero does (informational:
	// Salvor finds it from the location and the pod's namespace).
	// +optional
	RepoIdentifier string `json:"repoIdentifier,omitempty"`
	// +kubebuilder:validation:Enum=kopia
	UploaderType string `json:"uploaderType"`
	// Tags are kept with the snapshot in the repository.
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// +optional
	UploaderSettings map[string]string `json:"uploaderSettings,omitempty"`
	// Cancel asks the agent to stop; the backup ends Canceled.
	// +optional
	Cancel bool `json:"cancel,omitempty"`
}

// PodVolumeBackupStatus is how far a pod volume's backup has come.
type PodVolumeBackupStatus struct {
	// +optional
	Phase DataMoverPhase `json:"phase,omitempty"`
	// Path is the volume's directory as the agent read it (under the
	// node's kubelet directory).
	// +optional
	Path string `json:"path,omitempty"`
	// SnapshotID is the kopia snapshot that holds the files.
	// +optional
	SnapshotID string `json:"snapshotID,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// +optional
	// +nullable
	StartTimestamp *metav1.Time `json:"startTimestamp,omitempty"`
	// +optional
	// +nullable
	CompletionTimestamp *metav1.Time `json:"completionTimestamp,omitempty"`
	// +optional
	Progress VolumeOperationProgress `json:"progress,omitempty"`
	// IncrementalBytes is what this backup wrote into the bucket after
	// deduplication against what the repository already held.
	// +optional
	IncrementalBytes int64 `json:"incrementalBytes,omitempty"`
	// +optional
	// +nullable
	AcceptedTimestamp *metav1.Time `json:"acceptedTimestamp,omitempty"`
}

// PodVolumeBackup copies the files of one volume of a running pod into a
// backup storage location: the backup makes it, the node agent on the
// pod's node does it (Velero's file-system backup).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Pod",type=string,JSONPath=`.spec.pod.name`
// +kubebuilder:printcolumn:name="Volume",type=string,JSONPath=`.spec.volume`
// +kubebuilder:printcolumn:name="Bytes Done",type=integer,JSONPath=`.status.progress.bytesDone`
// +kubebuilder:printcolumn:name="Total Bytes",type=integer,JSONPath=`.status.progress.totalBytes`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.spec.node`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PodVolumeBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PodVolumeBackupSpec `json:"spec,omitempty"`
	// +optional
	Status PodVolumeBackupStatus `json:"status,omitempty"`
}

// PodVolumeBackupList is a list of PodVolumeBackups.
//
// +kubebuilder:object:root=true
type PodVolumeBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodVolumeBackup `json:"items"`
}

// PodVolumeRestoreSpec says which snapshot of a pod volume's files goes
// into which volume of a restored pod (Velero's field names).
type PodVolumeRestoreSpec struct {
	// Pod is the restored pod (namespace, name and uid) whose volume is
	// written; the agent on the node it was scheduled to writes it.
	Pod corev1.ObjectReference `json:"pod"`
	// Volume is the name of the volume in the pod's spec.
	Volume                string `json:"volume"`
	BackupStorageLocation string `json:"backupStorageLocation"`
	// +optional
	RepoIdentifier string `json:"repoIdentifier,omitempty"`
	// +kubebuilder:validation:Enum=kopia
	UploaderType string `json:"uploaderType"`
	SnapshotID   string `json:"snapshotID"`
	// SourceNamespace is the namespace the pod was backed up from: its
	// repository holds the snapshot.
	SourceNamespace string `json:"sourceNamespace"`
	// +optional
	UploaderSettings map[string]string `json:"uploaderSettings,omitempty"`
	// +optional
	Cancel bool `json:"cancel,omitempty"`
	// +optional
	SnapshotSize int64 `json:"snapshotSize,omitempty"`
}

// PodVolumeRestoreStatus is how far a pod volume's restore has come.
type PodVolumeRestoreStatus struct {
	// +optional
	Phase DataMoverPhase `json:"phase,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// +optional
	// +nullable
	StartTimestamp *metav1.Time `json:"startTimestamp,omitempty"`
	// +optional
	// +nullable
	CompletionTimestamp *metav1.Time `json:"completionTimestamp,omitempty"`
	// +optional
	Progress VolumeOperationProgress `json:"progress,omitempty"`
	// +optional
	// +nullable
	AcceptedTimestamp *metav1.Time `json:"acceptedTimestamp,omitempty"`
	// Node is where the restored pod, and so the agent that wrote its
	// volume, runs.
	// +optional
	Node string `json:"node,omitempty"`
}

// PodVolumeRestore writes a pod volume's backed-up files into that volume
// of the restored pod, which waits for them in an init container.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Pod",type=string,JSONPath=`.spec.pod.name`
// +kubebuilder:printcolumn:name="Volume",type=string,JSONPath=`.spec.volume`
// +kubebuilder:printcolumn:name="Bytes Done",type=integer,JSONPath=`.status.progress.bytesDone`
// +kubebuilder:printcolumn:name="Total Bytes",type=integer,JSONPath=`.status.progress.totalBytes`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.node`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PodVolumeRestore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PodVolumeRestoreSpec `json:"spec,omitempty"`
	// +optional
	Status PodVolumeRestoreStatus `json:"status,omitempty"`
}

// PodVolumeRestoreList is a list of PodVolumeRestores.
//
// +kubebuilder:object:root=true
type PodVolumeRestoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodVolumeRestore `json:"items"`
}
