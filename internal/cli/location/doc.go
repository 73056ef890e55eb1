// Package location holds `salvor backup-location`: creating and listing
// BackupStorageLocations.
package location
