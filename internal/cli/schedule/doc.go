// Package schedule is `salvor schedule`: create, get, describe, pause,
// unpause and delete Schedules. It reads the same timing and retention
// packages the server decides with, so describe's next runs and "kept by"
// column say what the server will do.
package schedule
