// Package snapshotlocation holds `salvor snapshot-location`: creating and
// listing VolumeSnapshotLocations.
package snapshotlocation
