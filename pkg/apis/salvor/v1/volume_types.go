package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VolumeSnapshotLocationSpec names the VolumeSnapshotter plugin that
// snapshots volumes, and its config.
type VolumeSnapshotLocationSpec struct {
	// Provider is the VolumeSnapshotter plugin, e.g. salvor.dev/local-volume.
	Provider string `json:"provider"`
	// +optional
	Config map[string]string `json:"config,omitempty"`
	// Default marks the location used when a backup names none.
	// +optional
	Default bool `json:"default,omitempty"`
	// Credential names a key of a Secret in the server's namespace that
	// holds the snapshotter's credentials (Velero's field); the server
	// writes it to a file only it can read and passes the file to the
	// plugin as config credentialsFile, as for a backup storage location.
	// +optional
	// +nullable
	Credential *corev1.SecretKeySelector `json:"credential,omitempty"`
}

// VolumeSnapshotLocationPhase says whether the server could initialise
// the location's plugin with its config (Velero's phases).
type VolumeSnapshotLocationPhase string

const (
	VolumeSnapshotLocationPhaseAvailable   VolumeSnapshotLocationPhase = "Available"
	VolumeSnapshotLocationPhaseUnavailable VolumeSnapshotLocationPhase = "Unavailable"
)

// VolumeSnapshotLocationStatus is what the server found when it last
// checked the location.
type VolumeSnapshotLocationStatus struct {
	// +optional
	Phase VolumeSnapshotLocationPhase `json:"phase,omitempty"`
	// Message says why a location is unavailable.
	// +optional
	Message string `json:"message,omitempty"`
	// +optional
	// +nullable
	LastValidationTime *metav1.Time `json:"lastValidationTime,omitempty"`
}

// VolumeSnapshotLocation is where, and by which plugin, volumes are snapshotted.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=vsl
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.provider`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Default",type=boolean,JSONPath=`.spec.default`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type VolumeSnapshotLocation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec VolumeSnapshotLocationSpec `json:"spec,omitempty"`
	// +optional
	Status VolumeSnapshotLocationStatus `json:"status,omitempty"`
}

// VolumeSnapshotLocationList is a list of VolumeSnapshotLocations.
//
// +kubebuilder:object:root=true
type VolumeSnapshotLocationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VolumeSnapshotLocation `json:"items"`
}

// VolumeOperationProgress counts a volume operation's bytes.
type VolumeOperationProgress struct {
	// +optional
	TotalBytes int64 `json:"totalBytes,omitempty"`
	// +optional
	BytesDone int64 `json:"bytesDone,omitempty"`
}

// VolumePluginBackupSpec says which volume of which backup, by which plugin.
type VolumePluginBackupSpec struct {
	// Volume is the persistent volume's name.
	Volume string `json:"volume"`
	Backup string `json:"backup"`
	Plugin string `json:"plugin"`
	// +optional
	PluginSpecific map[string]string `json:"pluginSpecific,omitempty"`
}

// VolumePluginStatus is what the statuses of VolumePluginBackups and
// VolumePluginRestores share: the phase, the times and the progress of a
// volume's snapshot or restore.
type VolumePluginStatus struct {
	// +optional
	Phase string `json:"phase,omitempty"`
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
	// Percent is bytesDone of totalBytes, for kubectl get.
	// +optional
	Percent int `json:"percent,omitempty"`
	// Updated is when the progress was last reported; a newer update wins
	// over an older one whoever writes it (the server or the plugin).
	// +optional
	// +nullable
	Updated *metav1.Time `json:"updated,omitempty"`
}

// Advance records a report of bytes done of total bytes. Neither goes
// backwards, as reports from the server and the plugin can cross; the
// percent follows.
func (s *VolumePluginStatus) Advance(done, total int64) {
	s.Progress.TotalBytes = max(s.Progress.TotalBytes, total)
	s.Progress.BytesDone = max(s.Progress.BytesDone, done)
	if s.Progress.TotalBytes > 0 {
		s.Percent = int(100 * s.Progress.BytesDone / s.Progress.TotalBytes)
	}
}

// Done records every byte copied.
func (s *VolumePluginStatus) Done() {
	s.Percent, s.Progress.BytesDone = 100, s.Progress.TotalBytes
}

// VolumePluginBackupStatus is a snapshot's progress.
type VolumePluginBackupStatus struct {
	VolumePluginStatus `json:",inline"`
	// SnapshotID is the full snapshot ID (the name is a sanitised form of it).
	// +optional
	SnapshotID string `json:"snapshotID,omitempty"`
}

// VolumePluginBackup shows how far a volume's snapshot has got.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Backup",type=string,JSONPath=`.spec.backup`
// +kubebuilder:printcolumn:name="Volume",type=string,JSONPath=`.spec.volume`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Percent",type=integer,JSONPath=`.status.percent`
// +kubebuilder:printcolumn:name="Bytes",type=integer,JSONPath=`.status.progress.bytesDone`
// +kubebuilder:printcolumn:name="Total",type=integer,JSONPath=`.status.progress.totalBytes`
type VolumePluginBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec VolumePluginBackupSpec `json:"spec,omitempty"`
	// +optional
	Status VolumePluginBackupStatus `json:"status,omitempty"`
}

// VolumePluginBackupList is a list of VolumePluginBackups.
//
// +kubebuilder:object:root=true
type VolumePluginBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VolumePluginBackup `json:"items"`
}

// VolumePluginRestoreSpec says which snapshot of which backup, by which plugin.
type VolumePluginRestoreSpec struct {
	SnapshotID string `json:"snapshotID"`
	Backup     string `json:"backup"`
	Plugin     string `json:"plugin"`
	// +optional
	PluginSpecific map[string]string `json:"pluginSpecific,omitempty"`
}

// VolumePluginRestoreStatus is a volume restore's progress.
type VolumePluginRestoreStatus struct {
	VolumePluginStatus `json:",inline"`
	// VolumeID is the new volume's ID.
	// +optional
	VolumeID string `json:"volumeID,omitempty"`
}

// VolumePluginRestore shows how far a volume's restore has got.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Backup",type=string,JSONPath=`.spec.backup`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Percent",type=integer,JSONPath=`.status.percent`
// +kubebuilder:printcolumn:name="Volume",type=string,JSONPath=`.status.volumeID`
type VolumePluginRestore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec VolumePluginRestoreSpec `json:"spec,omitempty"`
	// +optional
	Status VolumePluginRestoreStatus `json:"status,omitempty"`
}

// VolumePluginRestoreList is a list of VolumePluginRestores.
//
// +kubebuilder:object:root=true
type VolumePluginRestoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VolumePluginRestore `json:"items"`
}
