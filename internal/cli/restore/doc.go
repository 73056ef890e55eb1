// Package restore holds `salvor restore`: create, get, describe, logs,
// cancel and delete.
package restore
