package backup

import "github.com/salvor-dev/salvor/internal/cli/veleroflag"

// veleroFlags are the flags of `velero backup create` (and `velero
// schedule create`) for fields Salvor's BackupSpec has not.
var veleroFlags = []veleroflag.Flag{
	{Name: "csi-snapshot-timeout", Path: []string{"csiSnapshotTimeout"}, Value: veleroflag.Duration,
		Usage: "Velero's; Salvor bounds CSI snapshots by --item-operation-timeout (kept, listed as ignored)"},
	{Name: "default-volumes-to-fs-backup", Path: []string{"defaultVolumesToFsBackup"}, Value: veleroflag.Bool, Bool: true,
		Usage: "copy the files of every volume of the backup's running pods (file-system backup, by the node agent) but those a pod excludes with backup.velero.io/backup-volumes-excludes; false copies only those a pod lists in backup.velero.io/backup-volumes; unset, the server's --default-volumes-to-fs-backup (Velero's flag)"},
	{Name: "parallel-files-upload", Path: []string{"uploaderConfig", "parallelFilesUpload"}, Value: veleroflag.Int,
		Usage: "Velero's; Salvor's node agent and mover pods read one file per core at once (kept, listed as ignored)"},
}

// VeleroFields are the fields Velero's flags given set, by their dotted
// path under the spec (a Schedule's: under spec.template).
func (o *SpecFlags) VeleroFields() (map[string]any, error) {
	return veleroflag.Fields(o.flags, veleroFlags)
}
