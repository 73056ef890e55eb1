// Package server holds `salvor server`: the controllers that run backups,
// check and sync locations, and expire and delete backups, with the plugin
// host and the metrics endpoint.
package server
