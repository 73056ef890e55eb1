// Package testbin builds Go programs for tests: plugin binaries that tests
// run as real subprocesses. Builds go to a per-run directory and reuse Go's
// build cache, so a second run costs little. It also finds the module's
// root and the `salvor` commands the README and docs show, which the docs
// tests parse and run.
package testbin
