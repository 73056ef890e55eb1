// Package podvolumeplugin is Salvor's built-in file-system backup of pod
// volumes, served by `salvor run-plugins` as a plugin like the CSI
// actions: a BackupItemAction v2 on pods that, for a running pod's volumes
// package podvolume chooses (Velero's annotations and
// defaultVolumesToFsBackup), makes one PodVolumeBackup per volume in the
// backup's namespace and follows them as the pod's operation. The node
// agent on the pod's node copies the files (package nodeagent); the
// backup waits for them as for any operation, and its describe shows their
// bytes.
package podvolumeplugin
