// Command directory-store is an ObjectStore plugin: objects as files under a
// directory (config "root"). It serves Salvor's own built-in filesystem store
// (package pkg/objectstore/filesystem, read it for the implementation) under
// an example name, to show that a store is a plugin like any other: the
// salvor binary serves the same code as salvor.dev/filesystem.
package main

import (
	"github.com/salvor-dev/salvor/pkg/objectstore/filesystem"
	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
)

func main() {
	sdk.NewServer().RegisterObjectStore("example.io/directory", filesystem.New).Serve()
}
