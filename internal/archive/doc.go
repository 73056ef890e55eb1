// Package archive writes and reads a backup's tarball, <name>.tar.gz, in the
// layout Velero and Salvor share:
//
//	metadata/version                                   "1.1.0\n"
//	resources/<resource>[.<group>]/namespaces/<ns>/<name>.json
//	resources/<resource>[.<group>]/cluster/<name>.json
//	resources/<resource>[.<group>]/<version>-preferredversion/namespaces/<ns>/<name>.json
//
// Each item is written twice: once at the resource's top level and once
// under its preferred version's directory. The Writer streams: nothing is
// kept in memory but the entry being written, so memory does not grow with
// the number of items.
//
// The Reader treats a tarball as untrusted input: absolute paths, "..",
// links and other non-regular entries, entries over a size bound, JSON that
// does not parse and unknown format versions are errors naming the entry.
package archive
