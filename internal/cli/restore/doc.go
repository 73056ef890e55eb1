// Package restore holds `salvor restore`: create, get, describe, logs and
// cancel.
package restore
