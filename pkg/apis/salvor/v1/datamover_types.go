package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DataMoverPhase is how far a DataUpload, DataDownload, PodVolumeBackup or
// PodVolumeRestore has come (Velero's phases).
// +kubebuilder:validation:Enum=New;Accepted;Prepared;InProgress;Canceling;Canceled;Completed;Failed
type DataMoverPhase string

const (
	DataMoverPhaseNew        DataMoverPhase = "New"
	DataMoverPhaseAccepted   DataMoverPhase = "Accepted"
	DataMoverPhasePrepared   DataMoverPhase = "Prepared"
	DataMoverPhaseInProgress DataMoverPhase = "InProgress"
	DataMoverPhaseCanceling  DataMoverPhase = "Canceling"
	DataMoverPhaseCanceled   DataMoverPhase = "Canceled"
	DataMoverPhaseCompleted  DataMoverPhase = "Completed"
	DataMoverPhaseFailed     DataMoverPhase = "Failed"
)

// Ended says the phase is final.
func (p DataMoverPhase) Ended() bool {
	return p == DataMoverPhaseCompleted || p == DataMoverPhaseFailed || p == DataMoverPhaseCanceled
}

// SnapshotTypeCSI is the one snapshot type a DataUpload moves.
const SnapshotTypeCSI = "CSI"

// CSISnapshotSpec names the CSI snapshot whose data is moved.
type CSISnapshotSpec struct {
	// VolumeSnapshot is the snapshot's name, in the DataUpload's
	// sourceNamespace.
	VolumeSnapshot string `json:"volumeSnapshot"`
	// StorageClass is the source claim's storage class: the mover's
	// claim of the snapshot is made in it.
	// +optional
	StorageClass string `json:"storageClass,omitempty"`
	// +optional
	SnapshotClass string `json:"snapshotClass,omitempty"`
	// +optional
	Driver string `json:"driver,omitempty"`
}

// DataUploadSpec says which snapshot of which claim goes into which
// location (Velero's field names).
type DataUploadSpec struct {
	// +kubebuilder:validation:Enum=CSI
	SnapshotType string `json:"snapshotType"`
	// +optional
	// +nullable
	CSISnapshot *CSISnapshotSpec `json:"csiSnapshot,omitempty"`
	SourcePVC   string           `json:"sourcePVC"`
	// +optional
	DataMover       string `json:"datamover,omitempty"`
	SourceNamespace string `json:"sourceNamespace"`
	// BackupStorageLocation is the location, in the DataUpload's
	// namespace, whose kopia repository for sourceNamespace receives the
	// data.
	BackupStorageLocation string `json:"backupStorageLocation"`
	// +optional
	DataMoverConfig map[string]string `json:"dataMoverConfig,omitempty"`
	// Cancel asks the mover to stop; the upload ends Canceled with what it
	// made removed.
	// +optional
	Cancel bool `json:"cancel,omitempty"`
	// OperationTimeout bounds the upload (the backup's itemOperationTimeout).
	// +optional
	OperationTimeout metav1.Duration `json:"operationTimeout,omitempty"`
}

// DataUploadStatus is how far an upload has come.
type DataUploadStatus struct {
	// +optional
	Phase DataMoverPhase `json:"phase,omitempty"`
	// Path is the snapshot's source path in the repository.
	// +optional
	Path string `json:"path,omitempty"`
	// SnapshotID is the kopia snapshot that holds the data.
	// +optional
	SnapshotID string `json:"snapshotID,omitempty"`
	// +optional
	DataMoverResult map[string]string `json:"dataMoverResult,omitempty"`
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
	// IncrementalBytes is what this upload wrote into the bucket after
	// deduplication against the volume's earlier uploads.
	// +optional
	IncrementalBytes int64 `json:"incrementalBytes,omitempty"`
	// Node is where the mover pod ran.
	// +optional
	Node string `json:"node,omitempty"`
	// +optional
	NodeOS string `json:"nodeOS,omitempty"`
}

// DataUpload moves one CSI snapshot's data into a backup storage
// location: the CSI backup action makes it, a mover pod does it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Bytes Done",type=integer,JSONPath=`.status.progress.bytesDone`
// +kubebuilder:printcolumn:name="Total Bytes",type=integer,JSONPath=`.status.progress.totalBytes`
// +kubebuilder:printcolumn:name="Storage Location",type=string,JSONPath=`.spec.backupStorageLocation`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.node`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DataUpload struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec DataUploadSpec `json:"spec,omitempty"`
	// +optional
	Status DataUploadStatus `json:"status,omitempty"`
}

// DataUploadList is a list of DataUploads.
//
// +kubebuilder:object:root=true
type DataUploadList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DataUpload `json:"items"`
}

// TargetVolumeSpec is the claim a download fills.
type TargetVolumeSpec struct {
	PVC string `json:"pvc"`
	// +optional
	PV        string `json:"pv,omitempty"`
	Namespace string `json:"namespace"`
}

// DataDownloadSpec says which moved snapshot fills which claim (Velero's
// field names).
type DataDownloadSpec struct {
	TargetVolume          TargetVolumeSpec `json:"targetVolume"`
	BackupStorageLocation string           `json:"backupStorageLocation"`
	// +optional
	DataMover  string `json:"datamover,omitempty"`
	SnapshotID string `json:"snapshotID"`
	// SourceNamespace is the namespace the data was backed up from: its
	// repository holds the snapshot.
	SourceNamespace string `json:"sourceNamespace"`
	// +optional
	DataMoverConfig map[string]string `json:"dataMoverConfig,omitempty"`
	// +optional
	Cancel bool `json:"cancel,omitempty"`
	// +optional
	OperationTimeout metav1.Duration `json:"operationTimeout,omitempty"`
	// +optional
	NodeOS string `json:"nodeOS,omitempty"`
	// +optional
	SnapshotSize int64 `json:"snapshotSize,omitempty"`
}

// DataDownloadStatus is how far a download has come.
type DataDownloadStatus struct {
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
	Node string `json:"node,omitempty"`
}

// DataDownload writes a moved snapshot's data into a new volume for a
// restored claim: the CSI restore action makes it, a mover pod does it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Bytes Done",type=integer,JSONPath=`.status.progress.bytesDone`
// +kubebuilder:printcolumn:name="Total Bytes",type=integer,JSONPath=`.status.progress.totalBytes`
// +kubebuilder:printcolumn:name="Storage Location",type=string,JSONPath=`.spec.backupStorageLocation`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.node`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DataDownload struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec DataDownloadSpec `json:"spec,omitempty"`
	// +optional
	Status DataDownloadStatus `json:"status,omitempty"`
}

// DataDownloadList is a list of DataDownloads.
//
// +kubebuilder:object:root=true
type DataDownloadList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DataDownload `json:"items"`
}
