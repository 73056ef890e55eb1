// Package runplugins holds `salvor run-plugins`: the salvor binary serving
// its built-in plugins over the plugin protocol, so the server runs them
// through the same host, deadlines and restarts as any third-party plugin.
package runplugins
