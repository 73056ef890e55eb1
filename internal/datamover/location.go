package datamover

import (
	"github.com/salvor-dev/salvor/internal/kopiarepo"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// Location is where a location keeps kopia's repositories, as its object
// store is configured: the spec's config with the bucket, prefix and CA
// Velero passes to every object store, and the credentials file the
// mover pod has mounted (empty: the SDK's default chain).
func Location(bsl *salvorv1.BackupStorageLocation, credentialsFile string) kopiarepo.Location {
	cfg := map[string]string{}
	for k, v := range bsl.Spec.Config {
		cfg[k] = v
	}
	cfg["bucket"] = bsl.Spec.ObjectStorage.Bucket
	if bsl.Spec.ObjectStorage.Prefix != "" {
		cfg["prefix"] = bsl.Spec.ObjectStorage.Prefix
	}
	if ca := bsl.Spec.CACert(); ca != "" {
		cfg["caCert"] = ca
	}
	delete(cfg, "credentialsFile")
	if credentialsFile != "" {
		cfg["credentialsFile"] = credentialsFile
	}
	return kopiarepo.Location{Provider: bsl.Spec.Provider, Config: cfg}
}
