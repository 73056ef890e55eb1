package datamover

import (
	"fmt"

	"github.com/salvor-dev/salvor/internal/kopiarepo"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// Location is where a location keeps kopia's repositories, as its object
// store is configured: the spec's config with the bucket, prefix and CA
// Velero passes to every object store, the credentials file the mover pod
// has mounted (empty: the SDK's default chain), and the CA bundle of the
// Secret the location's caCertRef names, which the pod has mounted too
// (empty: none).
func Location(bsl *salvorv1.BackupStorageLocation, credentialsFile, caCert string) kopiarepo.Location {
	cfg := bsl.Spec.StoreConfig()
	delete(cfg, "credentialsFile")
	if credentialsFile != "" {
		cfg["credentialsFile"] = credentialsFile
	}
	if caCert != "" {
		cfg["caCert"] = caCert
	}
	return kopiarepo.Location{Provider: bsl.Spec.Provider, Config: cfg}
}

// Retention is the S3 Object Lock retention of the kopia repositories in
// bsl: its immutability's (kopia locks for at least a day), or nil.
func Retention(bsl *salvorv1.BackupStorageLocation) (*kopiarepo.Retention, error) {
	im := bsl.Spec.Immutability
	if im == nil {
		return nil, nil
	}
	r, err := kopiarepo.RetentionOf(im.Mode, im.RetainFor.Duration)
	if err != nil {
		return nil, fmt.Errorf("backup storage location %s: immutability: %w", bsl.Name, err)
	}
	return r, nil
}
