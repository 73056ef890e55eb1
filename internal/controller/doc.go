// Package controller holds the server's reconcilers: backups, backup
// storage locations (availability and sync), and backup expiry and deletion.
// They are thin: the backup engine (package backup) and the location layout
// (package persistence) do the work; reconcilers move objects between
// phases and record what happened.
package controller
