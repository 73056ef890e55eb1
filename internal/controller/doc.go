// Package controller holds the server's reconcilers: backups (and the
// plugin operations they wait for), restores (and theirs), backup storage
// locations (availability and sync), volume snapshot locations
// (availability), verifications, schedules, download requests, server
// status requests, and backup expiry and deletion (with the restores of a
// deleted backup).
//
// They are thin: the engines (packages backup, restore and operations) do
// the work, including a backup's finalisation, and the location layout
// (package persistence) holds the keys; reconcilers move objects between
// phases, decide what a failure leaves (retry, record what the first pass
// made, or fail), and record what happened in status and metrics.
//
// One file per reconciler, named for what it reconciles; what several
// share has its own file: backup_validate.go judges a backup spec (a
// Backup's or a Schedule's template), status.go writes status over the
// latest version of an object, locations.go reads locations, and the
// operations a backup's and a restore's plugins run are called through
// operations_plugins.go and counted in status and metrics by
// operations_metrics.go.
package controller
