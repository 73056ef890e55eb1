package persistence

import "fmt"

// File is one of the files a backup or a restore keeps in its directory of
// a location. Only the values below exist, so a file name cannot be
// misspelt at a call site: the compiler refuses it.
type File int

// The files of a backup (backups/<name>/<name><suffix>) and of a restore
// (restores/<name>/restore-<name><suffix>), in Velero's layout. A restore
// keeps only LogFile, ResultsFile, ResourceListFile (what became of each
// item) and ItemOperationsFile.
const (
	TarballFile File = iota + 1
	LogFile
	ResultsFile
	ResourceListFile
	ItemOperationsFile
	VolumeSnapshotsFile
	VolumePluginBackupsFile
	// OwnerFile names the Backup (by UID) whose run writes the files: a
	// failed run removes them only if it is still the owner.
	OwnerFile
	// ManifestFile holds the SHA-256 of every other file of a whole
	// backup and of every item of its tarball (see Manifest).
	ManifestFile
	// VolumeInfoFile and PodVolumeBackupsFile are Velero's records of how
	// it kept a backup's volume data (see VeleroOnlyVolumes). Salvor reads
	// them and never writes or deletes them.
	VolumeInfoFile
	PodVolumeBackupsFile
)

var suffixes = map[File]string{
	TarballFile:             ".tar.gz",
	LogFile:                 "-logs.gz",
	ResultsFile:             "-results.gz",
	ResourceListFile:        "-resource-list.json.gz",
	ItemOperationsFile:      "-itemoperations.json.gz",
	VolumeSnapshotsFile:     "-volumesnapshots.json.gz",
	VolumePluginBackupsFile: "-volumepluginbackups.json.gz",
	OwnerFile:               "-salvor-owner.json",
	ManifestFile:            "-salvor-manifest.json.gz",
	VolumeInfoFile:          "-volumeinfo.json.gz",
	PodVolumeBackupsFile:    "-podvolumebackups.json.gz",
}

// writtenByRuns tells whether a Salvor run writes f (and so may remove it).
func (f File) writtenByRuns() bool { return f != VolumeInfoFile && f != PodVolumeBackupsFile }

// Suffix is what follows the backup's name in the file's name.
func (f File) Suffix() string {
	s, ok := suffixes[f]
	if !ok {
		panic(fmt.Sprintf("persistence: file %d is not in the layout", int(f)))
	}
	return s
}

// String is the suffix, for messages.
func (f File) String() string { return f.Suffix() }
