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
	// it kept a backup's volume data (see VeleroVolumes). Salvor reads them
	// in backups it did not sign. It never writes VolumeInfoFile; it writes
	// PodVolumeBackupsFile into its own backups, for Velero's restores, but
	// a failed run leaves it (it cannot tell its copy from Velero's; without
	// the metadata no one reads it, and deleting the backup removes it).
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

// readLimit is the most of a file Salvor reads from a location: bytes
// (decompressed) and JSON values. The bucket is untrusted: a few KiB of
// gzip can hold GiBs of JSON, and decoded whole it would take the server's
// memory (and every restart would read it again). Each bound is far above
// what Salvor or Velero write there: a Backup object (etcd keeps objects
// under 1.5 MiB), a journal entry of an ID, a resource list or a manifest
// of a million items (the manifest read piece by piece), records of tens of
// thousands of volumes or operations.
type readLimit struct{ bytes, values int64 }

var (
	metadataLimit     = readLimit{4 << 20, 100_000}
	journalEntryLimit = readLimit{64 << 10, 1_000}
)

var readLimits = map[File]readLimit{
	ResultsFile:             {32 << 20, 1_000_000},
	ResourceListFile:        {64 << 20, 4_000_000},
	ItemOperationsFile:      {32 << 20, 250_000},
	VolumeSnapshotsFile:     {16 << 20, 250_000},
	VolumePluginBackupsFile: {16 << 20, 250_000},
	ManifestFile:            {256 << 20, 8_000_000},
	VolumeInfoFile:          {16 << 20, 250_000},
	PodVolumeBackupsFile:    {16 << 20, 250_000},
}

func (f File) readLimit() readLimit {
	if n, ok := readLimits[f]; ok {
		return n
	}
	return metadataLimit
}
