// Package snapshotlocation holds `salvor snapshot-location`: creating,
// listing, changing and deleting VolumeSnapshotLocations.
package snapshotlocation
