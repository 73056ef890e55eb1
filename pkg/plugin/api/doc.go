// Package api holds the values that cross a plugin call — resource
// identifiers and selectors, operation progress, the inputs and outputs of
// restore and delete actions — shared by the plugin-side SDK and the host.
//
// Plugin authors see these through package sdk, which re-exports them.
package api
