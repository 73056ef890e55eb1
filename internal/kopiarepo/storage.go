package kopiarepo

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/kopia/kopia/repo/blob"
	"github.com/kopia/kopia/repo/blob/filesystem"
	"github.com/kopia/kopia/repo/blob/s3"
	"k8s.io/apimachinery/pkg/util/validation"

	objectstore "github.com/salvor-dev/salvor/pkg/objectstore/filesystem"
)

// Location is a backup location as its object store sees it: the provider
// and the config the store is initialised with (bucket, prefix, region,
// s3Url, insecureSkipTLSVerify, caCert, credentialsFile, profile for S3;
// root, bucket and prefix for Salvor's filesystem store).
type Location struct {
	Provider string
	Config   map[string]string
}

// Kind is how a location keeps kopia's blobs.
type Kind int

const (
	// S3 is any S3-compatible store (velero.io/aws, salvor.dev/s3).
	S3 Kind = iota + 1
	// Filesystem is Salvor's filesystem store: a directory that whoever
	// moves the data must have mounted at the same path.
	Filesystem
)

// KindOf says how a location's provider keeps blobs, or why volume data
// cannot go there.
func KindOf(provider string) (Kind, error) {
	switch provider {
	case "aws", "velero.io/aws", "s3", "salvor.dev/s3":
		return S3, nil
	case "filesystem", "salvor.dev/filesystem":
		return Filesystem, nil
	}
	return 0, fmt.Errorf("provider %q: volume data can be moved only into S3-compatible locations (aws, salvor.dev/s3) or filesystem locations (salvor.dev/filesystem)", provider)
}

// Prefix is the object key prefix of namespace ns's repository under a
// location's prefix, as Velero lays it out.
func Prefix(locationPrefix, ns string) (string, error) {
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return "", fmt.Errorf("repository namespace %q: %s", ns, strings.Join(errs, "; "))
	}
	return path.Join(strings.Trim(locationPrefix, "/"), "kopia", ns) + "/", nil
}

// Storage opens the blob storage of namespace ns's repository in loc.
// create allows making the repository's directory or prefix (a backup);
// a restore opens only what is there.
func Storage(ctx context.Context, loc Location, ns string, create bool) (blob.Storage, error) {
	kind, err := KindOf(loc.Provider)
	if err != nil {
		return nil, err
	}
	prefix, err := Prefix(loc.Config["prefix"], ns)
	if err != nil {
		return nil, err
	}
	bucket := strings.Trim(loc.Config["bucket"], "/")
	if bucket == "" {
		return nil, errors.New("location config has no bucket")
	}
	if kind == Filesystem {
		root := loc.Config["root"]
		if !filepath.IsAbs(root) {
			return nil, fmt.Errorf("filesystem location root %q: want an absolute path", root)
		}
		// The same layout as the filesystem object store: root/bucket/key,
		// and the same refusals: a bucket is one directory of root, and a
		// prefix does not climb out of it.
		top, err := objectstore.BucketDir(root, bucket)
		if err != nil {
			return nil, fmt.Errorf("filesystem location: %w", err)
		}
		dir := filepath.Join(top, filepath.FromSlash(prefix))
		if !strings.HasPrefix(dir, top+string(filepath.Separator)) {
			return nil, fmt.Errorf("filesystem location prefix %q: the repository would be outside the bucket's directory %s", loc.Config["prefix"], top)
		}
		st, err := filesystem.New(ctx, &filesystem.Options{Path: dir}, create)
		if err != nil {
			return nil, fmt.Errorf("kopia repository at %s: %w", dir, err)
		}
		return st, nil
	}
	opt, err := s3Options(ctx, loc.Config)
	if err != nil {
		return nil, err
	}
	opt.BucketName, opt.Prefix = bucket, prefix
	st, err := s3.New(ctx, opt, create)
	if err != nil {
		return nil, fmt.Errorf("kopia repository at s3://%s/%s: %w", bucket, prefix, err)
	}
	return st, nil
}

// s3Options maps an S3 location's config onto kopia's S3 storage, with the
// location's own credentials (its credentialsFile and profile, else the
// AWS SDK's default chain: environment, shared files, IAM roles).
func s3Options(ctx context.Context, cfg map[string]string) (*s3.Options, error) {
	opt := &s3.Options{Region: cfg["region"]}
	if raw := cfg["s3Url"]; raw != "" {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("s3Url %q: want scheme://host[:port]", raw)
		}
		if u.Path != "" && u.Path != "/" {
			return nil, fmt.Errorf("s3Url %q: a path is not supported for volume data (kopia addresses the bucket itself)", raw)
		}
		opt.Endpoint, opt.DoNotUseTLS = u.Host, u.Scheme == "http"
	} else {
		if opt.Region == "" {
			return nil, errors.New("location config has neither s3Url nor region: set region (AWS) or s3Url (another S3-compatible store)")
		}
		opt.Endpoint = "s3." + opt.Region + ".amazonaws.com"
	}
	if opt.Region == "" {
		opt.Region = "us-east-1"
	}
	opt.DoNotVerifyTLS = cfg["insecureSkipTLSVerify"] == "true"
	if ca := cfg["caCert"]; ca != "" {
		opt.RootCA = []byte(ca)
	}
	var loads []func(*config.LoadOptions) error
	if f := cfg["credentialsFile"]; f != "" {
		loads = append(loads, config.WithSharedCredentialsFiles([]string{f}))
	}
	if p := cfg["profile"]; p != "" {
		loads = append(loads, config.WithSharedConfigProfile(p))
	}
	aws, err := config.LoadDefaultConfig(ctx, loads...)
	if err != nil {
		return nil, fmt.Errorf("location credentials: %w", err)
	}
	creds, err := aws.Credentials.Retrieve(ctx)
	if err != nil {
		if cfg["credentialsFile"] != "" {
			return nil, fmt.Errorf("location credentials file %s: %w", cfg["credentialsFile"], err)
		}
		// No credentials anywhere the SDK looks: kopia tries anonymous
		// access and the store says whether that is allowed.
		return opt, nil
	}
	opt.AccessKeyID, opt.SecretAccessKey, opt.SessionToken = creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken
	return opt, nil
}
