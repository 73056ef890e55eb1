// Package ociimage builds Salvor's container images without a container
// daemon and without pulling a base image: each platform's static binary
// becomes the one layer of an image on an empty base, and the images of
// all platforms one OCI index, written as an OCI layout tarball. Every
// timestamp is the commit's, so the same binaries give the same digest.
package ociimage
