package resources

// FSBackupVolumes is the annotation by which a pod asks Velero to copy
// the named volumes' files (restic or kopia), a comma-separated list.
const FSBackupVolumes = "backup.velero.io/backup-volumes"
