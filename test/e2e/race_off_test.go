//go:build !race

package e2e

// raceDetector: see race_on_test.go.
const raceDetector = false
