//go:build race

package e2e

// raceDetector says the tests (and, through GOFLAGS, the binaries they
// build) run under the race detector, which multiplies memory use several
// times: bounds on a process's memory allow for it.
const raceDetector = true
