// Package filesystem is Salvor's built-in object store, salvor.dev/filesystem:
// objects are files under a directory. Config "root" is the directory (an
// absolute path), a bucket is a directory in it and a key is a path in the
// bucket. Writes go to a temporary file renamed into place, so a reader
// never sees half an object; keys that would leave their bucket are refused.
//
// It is the embedded default: a location on it needs no credentials and no
// server, which is what `make demo` and single-machine setups use.
package filesystem
