package resources

// FSBackupVolumes is the annotation by which a pod asks Velero to copy
// the named volumes' files (restic or kopia), a comma-separated list.
// Salvor copies no files: a claim's volume is in a backup only as its
// snapshot, and an emptyDir not at all.
const FSBackupVolumes = "backup.velero.io/backup-volumes"
