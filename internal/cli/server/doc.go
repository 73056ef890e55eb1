// Package server holds `salvor server`: it starts the plugin host and the
// controllers — backups and their plugin operations, restores and theirs,
// schedules, locations (checks and sync), expiry and deletion, downloads,
// verification, the data mover's uploads and downloads, pod volume backups
// and restores, and kopia repository maintenance — with the metrics and
// health endpoints.
package server
