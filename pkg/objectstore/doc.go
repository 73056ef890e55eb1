// Package objectstore holds Salvor's built-in object stores, one package
// each (filesystem, s3); its tests hold both to one contract, through the
// salvor binary's `run-plugins` as the server runs them.
package objectstore
