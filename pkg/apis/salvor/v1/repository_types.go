package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BackupRepositorySpec names a kopia repository: the one a backup storage
// location holds for a namespace's volume data (Velero's field names).
type BackupRepositorySpec struct {
	// VolumeNamespace is the namespace whose volumes' data the repository
	// holds.
	VolumeNamespace string `json:"volumeNamespace"`
	// BackupStorageLocation holds the repository (under its prefix, at
	// kopia/<volumeNamespace>/).
	BackupStorageLocation string `json:"backupStorageLocation"`
	// RepositoryType is the repository's format: kopia.
	// +kubebuilder:validation:Enum=kopia
	RepositoryType string `json:"repositoryType"`
	// MaintenanceFrequency is how often kopia's maintenance runs on it
	// (the server's --default-repo-maintain-frequency when made).
	// +optional
	MaintenanceFrequency metav1.Duration `json:"maintenanceFrequency,omitempty"`
}

// BackupRepositoryPhase is whether the repository's maintenance works.
// +kubebuilder:validation:Enum=New;Ready;NotReady
type BackupRepositoryPhase string

const (
	BackupRepositoryPhaseNew      BackupRepositoryPhase = "New"
	BackupRepositoryPhaseReady    BackupRepositoryPhase = "Ready"
	BackupRepositoryPhaseNotReady BackupRepositoryPhase = "NotReady"
)

// MaintenanceResult is how one maintenance run ended.
// +kubebuilder:validation:Enum=Succeeded;Failed
type MaintenanceResult string

const (
	MaintenanceSucceeded MaintenanceResult = "Succeeded"
	MaintenanceFailed    MaintenanceResult = "Failed"
)

// BackupRepositoryMaintenanceStatus is one maintenance run.
type BackupRepositoryMaintenanceStatus struct {
	// +optional
	Result MaintenanceResult `json:"result,omitempty"`
	// +optional
	// +nullable
	StartTimestamp *metav1.Time `json:"startTimestamp,omitempty"`
	// +optional
	// +nullable
	CompleteTimestamp *metav1.Time `json:"completeTimestamp,omitempty"`
	// Message says why a run failed, or what it freed.
	// +optional
	Message string `json:"message,omitempty"`
}

// BackupRepositoryStatus is the repository's maintenance, as Velero
// reports it, and its size as the last run measured it.
type BackupRepositoryStatus struct {
	// +optional
	Phase BackupRepositoryPhase `json:"phase,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// LastMaintenanceTime is when the last successful maintenance ended.
	// +optional
	// +nullable
	LastMaintenanceTime *metav1.Time `json:"lastMaintenanceTime,omitempty"`
	// RecentMaintenance are the latest runs, oldest first (at most 3).
	// +optional
	RecentMaintenance []BackupRepositoryMaintenanceStatus `json:"recentMaintenance,omitempty"`
	// MaintenanceJob is the Job running maintenance now, if any.
	// +optional
	MaintenanceJob string `json:"maintenanceJob,omitempty"`
	// SizeBytes is the size of the repository's blobs after the last
	// maintenance run.
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`
	// Snapshots is how many kopia snapshots the repository held then.
	// +optional
	Snapshots int `json:"snapshots,omitempty"`
}

// BackupRepository is a kopia repository of moved volume data: the server
// makes one when it makes the repository, and runs kopia's maintenance on
// it as a Job on its schedule, recording each run here.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=repo
// +kubebuilder:printcolumn:name="Location",type=string,JSONPath=`.spec.backupStorageLocation`
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=`.spec.volumeNamespace`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Last Maintenance",type=date,JSONPath=`.status.lastMaintenanceTime`
type BackupRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec BackupRepositorySpec `json:"spec,omitempty"`
	// +optional
	Status BackupRepositoryStatus `json:"status,omitempty"`
}

// BackupRepositoryList is a list of BackupRepositories.
//
// +kubebuilder:object:root=true
type BackupRepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BackupRepository `json:"items"`
}
