// Package testbin builds Go programs for tests: salvor and the plugin
// binaries that tests run as real subprocesses. It links them into
// bin/testbin, where go build relinks a binary only when it is out of
// date, so the packages and runs that build the same program share one
// link, and copies them into the test's own directory. It also finds the
// module's root and the `salvor` commands the README and docs show, which
// the docs tests parse and run.
package testbin
