package restore

import "github.com/salvor-dev/salvor/internal/cli/veleroflag"

// veleroFlags are the flags of `velero restore create` for fields
// Salvor's RestoreSpec has not.
var veleroFlags = []veleroflag.Flag{
	{Name: "write-sparse-files", Path: []string{"uploaderConfig", "writeSparseFiles"}, Value: veleroflag.Bool, Bool: true,
		Usage: "Velero's; Salvor's file-system and data mover restores write every byte, runs of zeros included (kept, listed as ignored)"},
	{Name: "parallel-files-download", Path: []string{"uploaderConfig", "parallelFilesDownload"}, Value: veleroflag.Int,
		Usage: "Velero's; Salvor's file-system and data mover restores write 8 files at once, or one per core where there are more (kept, listed as ignored)"},
}
