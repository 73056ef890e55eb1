// Package cli builds the salvor command tree. Each noun has a package under
// internal/cli (plugin, ...) with one file per verb; every command returns
// its error (no os.Exit below main) and writes to the command's own output,
// so tests run commands with SetArgs and read what they print.
package cli
