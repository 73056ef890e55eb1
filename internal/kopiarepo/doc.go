// Package kopiarepo keeps volume data in kopia repositories inside a
// backup location: one repository per (location, namespace) at the path
// Velero uses, `<prefix>/kopia/<namespace>/`, so the data mover and the
// file-system backup of either tool can read what the other wrote.
//
// kopia does the work that matters (content-defined chunking,
// deduplication, compression, authenticated encryption, maintenance); this
// package only turns a location's config into kopia's storage, opens or
// makes the repository, and names snapshots the way Velero names them
// (source user and host "default", path "<requester>/kopia/<ns>/<claim>",
// the requester and uploader tags), so incremental backups find their
// parent whichever tool made it. Everything kopia reads back from the
// bucket is authenticated by the repository password: a planted blob is an
// error, never data.
package kopiarepo
