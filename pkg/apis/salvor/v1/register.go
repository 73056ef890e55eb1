package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of every Salvor resource.
var GroupVersion = schema.GroupVersion{Group: "salvor.dev", Version: "v1"}

var (
	// SchemeBuilder registers Salvor's types with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds Salvor's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&Backup{}, &BackupList{},
		&Restore{}, &RestoreList{},
		&BackupStorageLocation{}, &BackupStorageLocationList{},
		&DownloadRequest{}, &DownloadRequestList{},
		&VolumeSnapshotLocation{}, &VolumeSnapshotLocationList{},
		&VolumePluginBackup{}, &VolumePluginBackupList{},
		&VolumePluginRestore{}, &VolumePluginRestoreList{},
		&Schedule{}, &ScheduleList{},
		&ServerStatusRequest{}, &ServerStatusRequestList{},
		&DataUpload{}, &DataUploadList{},
		&DataDownload{}, &DataDownloadList{},
		&PodVolumeBackup{}, &PodVolumeBackupList{},
		&PodVolumeRestore{}, &PodVolumeRestoreList{},
		&BackupRepository{}, &BackupRepositoryList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
