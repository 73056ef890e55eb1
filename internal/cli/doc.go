// Package cli builds the salvor command tree. Each noun has a package under
// internal/cli (backup, restore, schedule, ...): the nouns with long verbs
// keep a file per verb (backup, restore, plugin), the others keep their
// short verbs together. Every command returns its error (no os.Exit below
// main) and writes to the command's own output, so tests run commands with
// SetArgs and read what they print; a verb with many flags binds them to an
// options struct that turns them into the object to send without a cluster
// (restore create's restore), so that part is tested on its own.
package cli
