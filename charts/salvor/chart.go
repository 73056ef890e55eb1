// Package chart carries the files of Salvor's Helm chart that the salvor
// binary needs where no cluster is reachable: the built-in resources the
// server's role names, so `salvor install --dry-run` renders offline what
// the chart renders. (.helmignore keeps this file out of the chart.)
package chart

import _ "embed"

// BuiltinResources is files/builtin-resources.yaml.
//
//go:embed files/builtin-resources.yaml
var BuiltinResources []byte
