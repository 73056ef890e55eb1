// Package metrics defines the server's Prometheus metrics and registers them
// with controller-runtime's registry, which the server exposes on its
// metrics address (/metrics).
package metrics
