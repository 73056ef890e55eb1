package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DownloadTargetKind names a file of a backup that can be downloaded.
// +kubebuilder:validation:Enum=BackupLog;BackupResults;BackupResourceList;BackupItemOperations;BackupContents;RestoreLog;RestoreResults;RestoreItemOperations;RestoreResourceList
type DownloadTargetKind string

const (
	DownloadTargetBackupLog            DownloadTargetKind = "BackupLog"
	DownloadTargetBackupResults        DownloadTargetKind = "BackupResults"
	DownloadTargetBackupResourceList   DownloadTargetKind = "BackupResourceList"
	DownloadTargetBackupItemOperations DownloadTargetKind = "BackupItemOperations"
	DownloadTargetBackupContents       DownloadTargetKind = "BackupContents"
	DownloadTargetRestoreLog           DownloadTargetKind = "RestoreLog"
	DownloadTargetRestoreResults       DownloadTargetKind = "RestoreResults"
	DownloadTargetRestoreOperations    DownloadTargetKind = "RestoreItemOperations"
	DownloadTargetRestoreResourceList  DownloadTargetKind = "RestoreResourceList"
)

// DownloadTarget is the file asked for.
type DownloadTarget struct {
	Kind DownloadTargetKind `json:"kind"`
	// Name is the backup's or restore's name.
	Name string `json:"name"`
}

// DownloadRequestSpec says which file to make downloadable.
type DownloadRequestSpec struct {
	Target DownloadTarget `json:"target"`
	// Recipient is an age public key (age1...) of the client asking. A file
	// of an encrypted location is not served as stored (only the server
	// holds the location's keys): the server decrypts it and encrypts it to
	// this key into a short-lived copy, whose URL it answers with.
	// +optional
	Recipient string `json:"recipient,omitempty"`
}

// DownloadRequestPhase is whether the server has answered.
// +kubebuilder:validation:Enum=New;Processed;Failed
type DownloadRequestPhase string

const (
	DownloadRequestPhaseNew       DownloadRequestPhase = "New"
	DownloadRequestPhaseProcessed DownloadRequestPhase = "Processed"
	DownloadRequestPhaseFailed    DownloadRequestPhase = "Failed"
)

// DownloadRequestStatus holds the answer: a URL valid until Expiration.
type DownloadRequestStatus struct {
	// +optional
	Phase DownloadRequestPhase `json:"phase,omitempty"`
	// +optional
	DownloadURL string `json:"downloadURL,omitempty"`
	// Encrypted tells that the URL's content is encrypted to
	// spec.recipient (the location is encrypted).
	// +optional
	Encrypted bool `json:"encrypted,omitempty"`
	// +optional
	// +nullable
	Expiration *metav1.Time `json:"expiration,omitempty"`
	// Message says why a request failed.
	// +optional
	Message string `json:"message,omitempty"`
}

// DownloadRequest asks the server for a short-lived URL of one of a backup's
// files in object storage: the CLI reads logs and results this way without
// credentials for the location.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.target.kind`
// +kubebuilder:printcolumn:name="Backup",type=string,JSONPath=`.spec.target.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
type DownloadRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec DownloadRequestSpec `json:"spec,omitempty"`
	// +optional
	Status DownloadRequestStatus `json:"status,omitempty"`
}

// DownloadRequestList is a list of DownloadRequests.
//
// +kubebuilder:object:root=true
type DownloadRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DownloadRequest `json:"items"`
}
