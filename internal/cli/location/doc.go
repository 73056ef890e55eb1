// Package location holds `salvor backup-location`: creating, listing,
// changing and deleting BackupStorageLocations, and rotating an encrypted
// location's key.
package location
