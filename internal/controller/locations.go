package controller

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/encryption"
	"github.com/salvor-dev/salvor/internal/kopiarepo"
	"github.com/salvor-dev/salvor/internal/persistence"
	"github.com/salvor-dev/salvor/internal/plugin/host"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	"github.com/salvor-dev/salvor/pkg/plugin/kind"
)

// Locations resolves BackupStorageLocations to their object stores.
type Locations struct {
	Client    client.Client
	Plugins   *host.Manager
	Namespace string
	// Secrets reads the credential Secrets locations name, directly from
	// the API server: the server caches no Secrets.
	Secrets client.Reader
	// CredentialsDir holds the credential files written for plugins
	// (default: a directory under the system's temporary one).
	CredentialsDir string
	// StagingDir keeps the files of immutable locations' backups until they
	// are whole (default: a directory under the system's temporary one, the
	// server's scratch volume when installed).
	StagingDir string
	// ConfineFilesystem keeps filesystem locations (salvor.dev/filesystem)
	// to FilesystemDirs: a location whose root is not one of them or in
	// one is refused. A server in a pod sets it (salvor install does): its
	// own disk is the pod's, read-only or scratch, and a backup written
	// there would say Completed and go with the pod.
	ConfineFilesystem bool
	FilesystemDirs    []string

	// scratch keeps the files of restores from ReadOnly locations.
	scratch persistence.Scratch
	// keys are the keys kept in Secrets of the server's namespace, by
	// Secret (clusterKey).
	keyMu sync.Mutex
	keys  map[string]*clusterKey
}

// Provider turns a location's provider into a plugin name: a name with a
// domain is used as is; a bare name is Salvor's built-in of that name if
// there is one, else Velero's ("aws" means velero.io/aws, as in Velero).
func (l *Locations) Provider(p string) string {
	if strings.Contains(p, "/") {
		return p
	}
	for _, pl := range l.Plugins.List() {
		if pl.Kind == kind.ObjectStore && pl.Name == "salvor.dev/"+p {
			return pl.Name
		}
	}
	return "velero.io/" + p
}

// Get returns the location named name, or the default one when name is
// empty.
func (l *Locations) Get(ctx context.Context, name string) (*salvorv1.BackupStorageLocation, error) {
	if name != "" {
		bsl := &salvorv1.BackupStorageLocation{}
		if err := l.Client.Get(ctx, client.ObjectKey{Namespace: l.Namespace, Name: name}, bsl); err != nil {
			return nil, fmt.Errorf("backup storage location %q: %w", name, err)
		}
		return bsl, nil
	}
	list := &salvorv1.BackupStorageLocationList{}
	if err := l.Client.List(ctx, list, client.InNamespace(l.Namespace)); err != nil {
		return nil, err
	}
	var defaults []string
	var found *salvorv1.BackupStorageLocation
	for i := range list.Items {
		if list.Items[i].Spec.Default {
			defaults = append(defaults, list.Items[i].Name)
			found = &list.Items[i]
		}
	}
	switch len(defaults) {
	case 0:
		return nil, fmt.Errorf("no storageLocation given and no backup storage location in namespace %s is the default: name one, or mark one with --default", l.Namespace)
	case 1:
		return found, nil
	default:
		return nil, fmt.Errorf("no storageLocation given and several locations are marked default (%s): name one", strings.Join(defaults, ", "))
	}
}

// locationConfig is what a location's object store is initialised with.
func (l *Locations) config(ctx context.Context, bsl *salvorv1.BackupStorageLocation) (map[string]string, error) {
	config := bsl.Spec.StoreConfig()
	if im := bsl.Spec.Immutability; im != nil {
		// The object store applies the retention (salvor.dev/s3 knows
		// these keys; a store that does not refuses them at Init, and the
		// location is Unavailable saying so).
		config["objectLockMode"] = im.Mode
		if im.Mode == "" {
			config["objectLockMode"] = "GOVERNANCE"
		}
		config["objectLockRetainFor"] = im.RetainFor.Duration.String()
	}
	if ref := bsl.Spec.ObjectStorage.CACertRef; ref != nil {
		if bsl.Spec.CACert() != "" {
			return config, fmt.Errorf("objectStorage.caCertRef and caCert (or config caCert) are both set: keep one")
		}
		pem, err := l.secretKey(ctx, ref, "caCertRef")
		if err != nil {
			return config, err
		}
		if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return config, fmt.Errorf("caCertRef secret %s/%s key %q holds no PEM certificate", l.Namespace, ref.Name, ref.Key)
		}
		config["caCert"] = string(pem)
	}
	if kind, err := kopiarepo.KindOf(bsl.Spec.Provider); err == nil && kind == kopiarepo.Filesystem && l.ConfineFilesystem {
		if err := filesystemRootProblem(config["root"], l.FilesystemDirs); err != nil {
			return config, err
		}
	}
	return config, l.addCredential(ctx, config, bsl.Spec.Credential)
}

// filesystemRootProblem says why a filesystem location's root is not where
// a confined server may keep backups: at or under one of dirs, the
// directories its pod mounts from the node (--filesystem-location-dir).
func filesystemRootProblem(root string, dirs []string) error {
	if !filepath.IsAbs(root) {
		return fmt.Errorf("config root %q: want an absolute directory path", root)
	}
	root = filepath.Clean(root)
	for _, d := range dirs {
		if d = filepath.Clean(d); root == d || strings.HasPrefix(root, strings.TrimSuffix(d, "/")+"/") {
			return nil
		}
	}
	if len(dirs) == 0 {
		return fmt.Errorf("config root %s: this server mounts no directory for filesystem locations, so their backups would be written to its pod's own disk and lost with the pod; install with --filesystem-location-dir naming a directory of the nodes that holds %s", root, root)
	}
	return fmt.Errorf("config root %s is not in %s, the directories this server mounts for filesystem locations (--filesystem-location-dir): its backups would be written to its pod's own disk and lost with the pod; set root in one of them", root, strings.Join(dirs, ", "))
}

// secretKey reads a key of a Secret in the server's namespace, what names
// the field that refers to it.
func (l *Locations) secretKey(ctx context.Context, c *corev1.SecretKeySelector, what string) ([]byte, error) {
	if l.Secrets == nil {
		return nil, fmt.Errorf("%s secret %s: this server reads no secrets", what, c.Name)
	}
	secret := &corev1.Secret{}
	if err := l.Secrets.Get(ctx, client.ObjectKey{Namespace: l.Namespace, Name: c.Name}, secret); err != nil {
		return nil, fmt.Errorf("%s secret %s/%s: %w", what, l.Namespace, c.Name, err)
	}
	data, ok := secret.Data[c.Key]
	if !ok {
		return nil, fmt.Errorf("%s secret %s/%s has no key %q", what, l.Namespace, c.Name, c.Key)
	}
	return data, nil
}

// addCredential gives a plugin's config the file of a location's
// credential (credentialsFile), when the location names one.
func (l *Locations) addCredential(ctx context.Context, config map[string]string, c *corev1.SecretKeySelector) error {
	if c == nil {
		return nil
	}
	path, err := l.credentialFile(ctx, c)
	config["credentialsFile"] = path
	return err
}

// credentialFile writes a credential Secret's key to a file only the
// server can read, named by its content: a changed Secret is a new file,
// so the plugin is initialised again with it.
func (l *Locations) credentialFile(ctx context.Context, c *corev1.SecretKeySelector) (string, error) {
	data, err := l.secretKey(ctx, c, "credential")
	if err != nil {
		return "", err
	}
	dir := l.CredentialsDir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "salvor-credentials")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	path := filepath.Join(dir, c.Name+"-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	tmp, err := os.CreateTemp(dir, ".partial-")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return path, os.Rename(tmp.Name(), path)
}

// StoreNamed opens the backup store of the location named name.
func (l *Locations) StoreNamed(ctx context.Context, name string) (*persistence.BackupStore, error) {
	bsl, err := l.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	return l.Store(ctx, bsl)
}

// Store opens a location's object store: through its encryption when it
// is encrypted.
func (l *Locations) Store(ctx context.Context, bsl *salvorv1.BackupStorageLocation) (*persistence.BackupStore, error) {
	config, err := l.config(ctx, bsl)
	if err != nil {
		return nil, fmt.Errorf("backup storage location %s: %w", bsl.Name, err)
	}
	provider := l.Provider(bsl.Spec.Provider)
	store, err := host.Get(ctx, l.Plugins, host.ObjectStores, provider, config)
	if errors.Is(err, host.ErrPluginNotFound) && provider == "velero.io/aws" {
		// Velero's habit: its AWS plugin is not installed here.
		err = fmt.Errorf("%w; Salvor's built-in S3 store takes the same config: set the provider to salvor.dev/s3 (salvor backup-location create NAME --provider salvor.dev/s3 ...), or install Velero's AWS plugin (salvor install --plugins velero/velero-plugin-for-aws:TAG)", err)
	}
	if err != nil {
		return nil, fmt.Errorf("backup storage location %s: %w", bsl.Name, err)
	}
	if bsl.Spec.Immutability != nil && !bsl.Spec.ReadOnly() {
		// Below the encryption: what waits on the server's disk is
		// encrypted too.
		if store, err = persistence.Staged(store, filepath.Join(l.stagingDir(), bsl.Namespace, bsl.Name)); err != nil {
			return nil, fmt.Errorf("backup storage location %s: %w", bsl.Name, err)
		}
	}
	var keys *encryption.Keys
	if bsl.Spec.Encryption != nil {
		if keys, _, err = l.EncryptionKeys(ctx, bsl); err != nil {
			return nil, err
		}
		store = &encryption.Store{ObjectStore: store, Keys: keys, Location: bsl.Name, KeySecret: keySecretName(l.Namespace, bsl.Spec.Encryption.KeySecret)}
	}
	var s *persistence.BackupStore
	if bsl.Spec.ReadOnly() {
		s = persistence.NewReadOnly(store, bsl.Spec.ObjectStorage.Bucket, bsl.Spec.ObjectStorage.Prefix, &l.scratch)
	} else {
		s = persistence.New(store, bsl.Spec.ObjectStorage.Bucket, bsl.Spec.ObjectStorage.Prefix)
		// Without the key (the server may not make Secrets), journal entries
		// go unauthenticated, and none is acted on after a restart.
		if key, err := l.clusterKey(ctx, JournalKeySecret); err == nil {
			s.SetJournalKey(key)
		}
	}
	// Without them, manifests are written unsigned and every backup read
	// is unauthenticated: restores warn, and trust none of its snapshots.
	if mk, err := l.manifestKeys(ctx, bsl, keys); err == nil {
		s.SetManifestKeys(mk)
	}
	return s, nil
}

func (l *Locations) stagingDir() string {
	if l.StagingDir != "" {
		return l.StagingDir
	}
	return filepath.Join(os.TempDir(), "salvor-staging")
}

// RepositoryLocation is where a location keeps its kopia repositories,
// as the server reaches them: its object store's config, with the
// server's own file of the location's credential.
func (l *Locations) RepositoryLocation(ctx context.Context, bsl *salvorv1.BackupStorageLocation) (kopiarepo.Location, error) {
	config, err := l.config(ctx, bsl)
	if err != nil {
		return kopiarepo.Location{}, fmt.Errorf("backup storage location %s: %w", bsl.Name, err)
	}
	return kopiarepo.Location{Provider: bsl.Spec.Provider, Config: config}, nil
}
