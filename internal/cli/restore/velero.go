package restore

import "github.com/salvor-dev/salvor/internal/cli/veleroflag"

// veleroFlags are the flags of `velero restore create` for fields
// Salvor's RestoreSpec has not.
var veleroFlags = []veleroflag.Flag{
	{Name: "write-sparse-files", Path: []string{"uploaderConfig", "writeSparseFiles"}, Value: veleroflag.Bool, Bool: true,
		Usage: "Velero's; Salvor has no file-system restore (kept, listed as ignored)"},
	{Name: "parallel-files-download", Path: []string{"uploaderConfig", "parallelFilesDownload"}, Value: veleroflag.Int,
		Usage: "Velero's; Salvor has no file-system restore (kept, listed as ignored)"},
}
