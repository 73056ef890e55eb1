package v1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BackupStorageLocationPhase says whether a location can be used.
// +kubebuilder:validation:Enum=Available;Unavailable
type BackupStorageLocationPhase string

const (
	BackupStorageLocationPhaseAvailable   BackupStorageLocationPhase = "Available"
	BackupStorageLocationPhaseUnavailable BackupStorageLocationPhase = "Unavailable"
)

// ObjectStorageLocation is where in an object store backups live.
type ObjectStorageLocation struct {
	// Bucket is the bucket (for the filesystem store, a directory under its root).
	Bucket string `json:"bucket"`
	// Prefix is a path inside the bucket under which everything is written.
	// +optional
	Prefix string `json:"prefix,omitempty"`
	// CACert is the PEM bundle of the CA that signs the object store's
	// certificate (Velero's field); the plugin gets it as config caCert
	// unless the config gives one.
	// +optional
	CACert []byte `json:"caCert,omitempty"`
	// CACertRef names the key of a Secret in the location's namespace
	// holding that PEM bundle instead (Velero 1.18's field). The server
	// reads it when it opens the location, and mounts it into mover pods;
	// it may not be set with caCert or config caCert.
	// +optional
	CACertRef *corev1.SecretKeySelector `json:"caCertRef,omitempty"`
}

// BackupStorageLocationSpec says which object store plugin holds backups and how to reach it.
type BackupStorageLocationSpec struct {
	// Provider is the object store plugin: salvor.dev/filesystem, salvor.dev/s3,
	// or a third-party plugin's name. A name without a domain means velero.io/<name>.
	Provider string `json:"provider"`
	// Config is passed to the plugin's Init (for example s3Url, region, root).
	// +optional
	Config map[string]string `json:"config,omitempty"`
	// ObjectStorage is the bucket and prefix.
	ObjectStorage ObjectStorageLocation `json:"objectStorage"`
	// Credential names a key of a Secret in the server's namespace that
	// holds the object store's credentials (Velero's field). The server
	// writes it to a file only it can read and passes the file to the
	// plugin as config credentialsFile, as Velero does.
	// +optional
	// +nullable
	Credential *corev1.SecretKeySelector `json:"credential,omitempty"`
	// Default marks the location used by backups that name none.
	// +optional
	Default bool `json:"default,omitempty"`
	// BackupSyncPeriod is how often the backups in the location are synced
	// into the cluster (Velero's field); unset means at every check, and
	// zero never.
	// +optional
	// +nullable
	BackupSyncPeriod *metav1.Duration `json:"backupSyncPeriod,omitempty"`
	// ValidationFrequency is how often the location is checked (Velero's
	// field); unset means the server's --location-check-interval, and zero only
	// when the location changes.
	// +optional
	// +nullable
	ValidationFrequency *metav1.Duration `json:"validationFrequency,omitempty"`
	// AccessMode is ReadWrite (the default) or ReadOnly. A ReadOnly location
	// is never written to or deleted from: backups to it fail validation,
	// restores from it keep their logs and results in the cluster only, and
	// deleting or expiring one of its backups removes only the Backup
	// object. A disaster-recovery cluster reading another cluster's bucket
	// uses it.
	// +optional
	// +kubebuilder:validation:Enum=ReadWrite;ReadOnly
	// +kubebuilder:default=ReadWrite
	AccessMode BackupStorageLocationAccessMode `json:"accessMode,omitempty"`
	// Encryption encrypts every object Salvor writes to the location, and
	// checks every one it reads (Salvor's; Velero cannot read such a
	// location). See docs/security.md.
	// +optional
	// +nullable
	Encryption *LocationEncryption `json:"encryption,omitempty"`
	// Immutability writes every object with an S3 Object Lock retention of
	// RetainFor from when it is written, so that nobody — ransomware with
	// the bucket's keys included — can delete or overwrite a backup before
	// then. The bucket must have Object Lock enabled; the location is
	// Unavailable, saying why, otherwise. Deleting or expiring a backup
	// waits for the retention to end. Set RetainFor to at least the
	// backups' TTL.
	// +optional
	// +nullable
	Immutability *LocationImmutability `json:"immutability,omitempty"`
	// Tenants opens the location to the Backups, Restores and Schedules
	// that teams make in their own namespaces (Salvor's; docs/self-service.md
	// says what of it this version runs). Without it only the server's
	// namespace uses the location.
	// +optional
	// +nullable
	Tenants *LocationTenants `json:"tenants,omitempty"`
}

// LocationTenants says which tenant namespaces may use a location.
type LocationTenants struct {
	// NamespaceSelector selects, by the namespaces' labels, the namespaces
	// whose Backups, Restores and Schedules may use the location; an
	// empty selector selects every namespace.
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector"`
	// ShareBackups lets each selected namespace see and restore the
	// location's backups made in the server's namespace that hold it
	// (salvor.dev/tenant-visible does it for one backup).
	// +optional
	ShareBackups bool `json:"shareBackups,omitempty"`
	// Quota bounds what each selected namespace does in the location.
	// +optional
	Quota *TenantQuota `json:"quota,omitempty"`
}

// TenantQuota bounds what one namespace does in a location. Each
// namespace has the whole quota for itself.
type TenantQuota struct {
	// MaxConcurrentJobs is how many of the namespace's backups and
	// restores run at once (0: 1); the rest wait their turn, oldest
	// first, while other namespaces' jobs go ahead, so that one team's
	// many or large jobs do not hold up the others.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxConcurrentJobs int `json:"maxConcurrentJobs,omitempty"`
	// MaxBackups is how many backups the namespace keeps in the location
	// (0: no limit). A backup beyond it, a schedule's run included, fails
	// validation saying so; one deleted or expired makes room.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxBackups int `json:"maxBackups,omitempty"`
	// MaxBytes is how much the namespace's backups may hold in the
	// location: their files, as their manifests record them, and the new
	// data their volumes' moves wrote into its repositories (no limit
	// when unset). A backup made while they hold as much or more fails
	// validation saying so.
	// +optional
	MaxBytes *resource.Quantity `json:"maxBytes,omitempty"`
}

// LocationImmutability is how long a location's objects are retained.
type LocationImmutability struct {
	RetainFor metav1.Duration `json:"retainFor"`
	// Mode is GOVERNANCE (the default: a user granted
	// s3:BypassGovernanceRetention can still delete) or COMPLIANCE (nobody
	// can, the account's root included, until the retention ends).
	// +optional
	// +kubebuilder:validation:Enum=GOVERNANCE;COMPLIANCE
	Mode string `json:"mode,omitempty"`
}

// LocationEncryption says where a location's keys are.
type LocationEncryption struct {
	// KeySecret names a key of a Secret in the server's namespace holding
	// the location's keys: age identities (AGE-SECRET-KEY-1...), one a
	// line, oldest first. The newest encrypts; all decrypt. When the
	// Secret or the key does not exist, the server creates it with a new
	// key and says so in the location's status.
	KeySecret corev1.SecretKeySelector `json:"keySecret"`
}

// BackupStorageLocationAccessMode says whether Salvor may write to a location.
type BackupStorageLocationAccessMode string

const (
	BackupStorageLocationAccessModeReadWrite BackupStorageLocationAccessMode = "ReadWrite"
	BackupStorageLocationAccessModeReadOnly  BackupStorageLocationAccessMode = "ReadOnly"
)

// ReadOnly tells whether Salvor must not write to or delete from the location.
func (s BackupStorageLocationSpec) ReadOnly() bool {
	return s.AccessMode == BackupStorageLocationAccessModeReadOnly
}

// BackupStorageLocationStatus is what the server last found out about the location.
type BackupStorageLocationStatus struct {
	// +optional
	Phase BackupStorageLocationPhase `json:"phase,omitempty"`
	// Message says why a location is unavailable.
	// +optional
	Message string `json:"message,omitempty"`
	// +optional
	// +nullable
	LastValidationTime *metav1.Time `json:"lastValidationTime,omitempty"`
	// +optional
	// +nullable
	LastSyncedTime *metav1.Time `json:"lastSyncedTime,omitempty"`
	// EncryptionKeys counts the keys in an encrypted location's key
	// Secret, and EncryptionRecipient is the public half of the newest,
	// the one new objects are encrypted to.
	// +optional
	EncryptionKeys int `json:"encryptionKeys,omitempty"`
	// +optional
	EncryptionRecipient string `json:"encryptionRecipient,omitempty"`
}

// BackupStorageLocation is an object store that holds backups.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=bsl
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.provider`
// +kubebuilder:printcolumn:name="Bucket",type=string,JSONPath=`.spec.objectStorage.bucket`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Default",type=boolean,JSONPath=`.spec.default`
// +kubebuilder:printcolumn:name="Access Mode",type=string,JSONPath=`.spec.accessMode`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type BackupStorageLocation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec BackupStorageLocationSpec `json:"spec,omitempty"`
	// +optional
	Status BackupStorageLocationStatus `json:"status,omitempty"`
}

// BackupStorageLocationList is a list of BackupStorageLocations.
//
// +kubebuilder:object:root=true
type BackupStorageLocationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BackupStorageLocation `json:"items"`
}

// StoreConfig is the config a location's object store is initialised
// with: the spec's config, with the bucket, prefix and CA Velero passes
// to every object store.
func (s BackupStorageLocationSpec) StoreConfig() map[string]string {
	config := map[string]string{}
	for k, v := range s.Config {
		config[k] = v
	}
	config["bucket"] = s.ObjectStorage.Bucket
	if s.ObjectStorage.Prefix != "" {
		config["prefix"] = s.ObjectStorage.Prefix
	}
	if ca := s.CACert(); ca != "" {
		config["caCert"] = ca
	}
	return config
}

// CACertRef is the Secret key a location keeps its CA bundle in, when it
// does (nil for a nil location too); only when no bundle is in its spec.
func (l *BackupStorageLocation) CACertRef() *corev1.SecretKeySelector {
	if l == nil || l.Spec.CACert() != "" {
		return nil
	}
	return l.Spec.ObjectStorage.CACertRef
}

// CACert is the CA bundle the location's object store is reached with,
// when the spec holds it: config caCert, else objectStorage.caCert
// (Velero's field); "" for the system's roots or for a bundle in the
// Secret objectStorage.caCertRef names. The server's plugin and the CLI's
// downloads both use it.
func (s BackupStorageLocationSpec) CACert() string {
	if ca := s.Config["caCert"]; ca != "" {
		return ca
	}
	return string(s.ObjectStorage.CACert)
}
