// Package plugin holds `salvor plugin`: commands about plugin binaries.
package plugin
