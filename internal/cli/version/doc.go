// Package version is `salvor version`: the CLI's build, and the build and
// plugins of the server that handles Salvor's namespace, asked for with a
// ServerStatusRequest.
package version
