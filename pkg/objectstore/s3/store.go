package s3

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
)

// Name is the built-in store's plugin name.
const Name = "salvor.dev/s3"

var validKeys = []string{
	"region", "s3Url", "publicUrl", "s3ForcePathStyle", "insecureSkipTLSVerify", "caCert",
	"credentialsFile", "profile", "bucket", "prefix",
	"serverSideEncryption", "kmsKeyId", "customerKeyEncryptionFile",
	"objectLockMode", "objectLockRetainFor",
}

// Store talks to one S3 endpoint; see the package doc.
type Store struct {
	log    *slog.Logger
	client *s3.Client
	public *s3.Client
	//lint:ignore SA1019 transfermanager is a separate, younger module; manager still does multipart uploads of unknown length, which is all Salvor needs
	uploader *manager.Uploader
	sse      sse
	lock     lock
}

var _ sdk.ObjectStore = (*Store)(nil)

// New returns an uninitialised store, as a plugin factory.
func New(log *slog.Logger) (sdk.ObjectStore, error) { return &Store{log: log}, nil }

func (s *Store) Init(cfg map[string]string) error {
	var unknown []string
	for k := range cfg {
		if !contains(validKeys, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("config keys %v are not known; valid keys are %v", unknown, validKeys)
	}
	var err error
	if s.sse, err = parseSSE(cfg); err != nil {
		return err
	}
	if s.lock, err = parseLock(cfg); err != nil {
		return err
	}
	pathStyle, err := boolKey(cfg, "s3ForcePathStyle")
	if err != nil {
		return err
	}
	insecure, err := boolKey(cfg, "insecureSkipTLSVerify")
	if err != nil {
		return err
	}
	tlsConfig := &tls.Config{InsecureSkipVerify: insecure} //nolint:gosec // the user asked for it by name
	if pem := cfg["caCert"]; pem != "" {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM([]byte(pem)) {
			return errors.New("config caCert: no PEM certificate found in it")
		}
		tlsConfig.RootCAs = pool
	}
	// A buildable client, unlike a plain *http.Client, lets the SDK add a
	// CA bundle from the environment (AWS_CA_BUNDLE) on top of ours.
	httpClient := awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.TLSClientConfig = tlsConfig
		tr.MaxIdleConnsPerHost = 16
	})
	opts := []func(*config.LoadOptions) error{config.WithHTTPClient(httpClient)}
	region := cfg["region"]
	if region == "" && cfg["s3Url"] != "" {
		// S3-compatible servers rarely care, but the SDK wants a region.
		region = "us-east-1"
	}
	if region == "" {
		return errors.New("config region is required for AWS S3 (set s3Url too for an S3-compatible server)")
	}
	opts = append(opts, config.WithRegion(region))
	if f := cfg["credentialsFile"]; f != "" {
		opts = append(opts, config.WithSharedCredentialsFiles([]string{f}))
	}
	if p := cfg["profile"]; p != "" {
		opts = append(opts, config.WithSharedConfigProfile(p))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return fmt.Errorf("loading AWS configuration: %w", err)
	}
	clientFor := func(endpoint string) *s3.Client {
		return s3.NewFromConfig(awsCfg, func(o *s3.Options) {
			o.UsePathStyle = pathStyle
			if endpoint != "" {
				o.BaseEndpoint = aws.String(endpoint)
			}
		})
	}
	s.client = clientFor(cfg["s3Url"])
	s.public = s.client
	if pub := cfg["publicUrl"]; pub != "" {
		s.public = clientFor(pub)
	}
	s.uploader = manager.NewUploader(s.client) //lint:ignore SA1019 see Store.uploader
	if s.lock.on() {
		if cfg["bucket"] == "" {
			return errors.New("config objectLockMode needs the bucket (config bucket) to check it has Object Lock")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return s.checkBucket(ctx, cfg["bucket"])
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func boolKey(cfg map[string]string, key string) (bool, error) {
	v, ok := cfg[key]
	if !ok || v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("config %s=%q: want true or false", key, v)
	}
	return b, nil
}

func (s *Store) ready() error {
	if s.client == nil {
		return errors.New("the store was not initialised")
	}
	return nil
}

func (s *Store) PutObject(bucket, key string, body io.Reader) error {
	return s.PutObjectWithContext(context.Background(), bucket, key, body)
}

// PutObjectWithContext uploads body, in parts when it is large or of
// unknown length; a cancelled context aborts the upload.
func (s *Store) PutObjectWithContext(ctx context.Context, bucket, key string, body io.Reader) error {
	if err := s.ready(); err != nil {
		return err
	}
	in := &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: body}
	s.sse.put(in)
	s.lock.put(in, time.Now())
	//lint:ignore SA1019 see Store.uploader
	_, err := s.uploader.Upload(ctx, in)
	if err != nil {
		return fmt.Errorf("uploading s3://%s/%s: %w", bucket, key, err)
	}
	return nil
}

func (s *Store) ObjectExists(bucket, key string) (bool, error) {
	return s.ObjectExistsWithContext(context.Background(), bucket, key)
}

func (s *Store) ObjectExistsWithContext(ctx context.Context, bucket, key string) (bool, error) {
	if err := s.ready(); err != nil {
		return false, err
	}
	in := &s3.HeadObjectInput{Bucket: &bucket, Key: &key}
	s.sse.head(in)
	_, err := s.client.HeadObject(ctx, in)
	if err == nil {
		return true, nil
	}
	var nf *types.NotFound
	if errors.As(err, &nf) {
		return false, nil
	}
	return false, fmt.Errorf("checking s3://%s/%s: %w", bucket, key, err)
}

func (s *Store) GetObject(bucket, key string) (io.ReadCloser, error) {
	return s.GetObjectWithContext(context.Background(), bucket, key)
}

func (s *Store) GetObjectWithContext(ctx context.Context, bucket, key string) (io.ReadCloser, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	in := &s3.GetObjectInput{Bucket: &bucket, Key: &key}
	s.sse.get(in)
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("getting s3://%s/%s: %w", bucket, key, err)
	}
	return out.Body, nil
}

func (s *Store) ListCommonPrefixes(bucket, prefix, delimiter string) ([]string, error) {
	return s.ListCommonPrefixesWithContext(context.Background(), bucket, prefix, delimiter)
}

func (s *Store) ListCommonPrefixesWithContext(ctx context.Context, bucket, prefix, delimiter string) ([]string, error) {
	return s.list(ctx, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix, Delimiter: &delimiter},
		func(page *s3.ListObjectsV2Output, out []string) []string {
			for _, cp := range page.CommonPrefixes {
				out = append(out, aws.ToString(cp.Prefix))
			}
			return out
		})
}

func (s *Store) ListObjects(bucket, prefix string) ([]string, error) {
	return s.ListObjectsWithContext(context.Background(), bucket, prefix)
}

func (s *Store) ListObjectsWithContext(ctx context.Context, bucket, prefix string) ([]string, error) {
	return s.list(ctx, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix},
		func(page *s3.ListObjectsV2Output, out []string) []string {
			for _, o := range page.Contents {
				out = append(out, aws.ToString(o.Key))
			}
			return out
		})
}

// list reads every page of a listing, keeping what pick takes from each.
func (s *Store) list(ctx context.Context, in *s3.ListObjectsV2Input, pick func(*s3.ListObjectsV2Output, []string) []string) ([]string, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	var out []string
	p := s3.NewListObjectsV2Paginator(s.client, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing s3://%s/%s: %w", aws.ToString(in.Bucket), aws.ToString(in.Prefix), err)
		}
		out = pick(page, out)
	}
	return out, nil
}

func (s *Store) DeleteObject(bucket, key string) error {
	return s.DeleteObjectWithContext(context.Background(), bucket, key)
}

func (s *Store) DeleteObjectWithContext(ctx context.Context, bucket, key string) error {
	if err := s.ready(); err != nil {
		return err
	}
	if s.lock.on() {
		// A plain delete would only hide the object behind a delete
		// marker, its retained bytes staying: delete every version, or
		// fail saying how long the lock holds.
		return s.deleteVersions(ctx, bucket, key)
	}
	if _, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: &key}); err != nil {
		return fmt.Errorf("deleting s3://%s/%s: %w", bucket, key, err)
	}
	return nil
}

func (s *Store) CreateSignedURL(bucket, key string, ttl time.Duration) (string, error) {
	if err := s.ready(); err != nil {
		return "", err
	}
	if s.sse.customerKey != "" {
		return "", errors.New("objects encrypted with a customer-provided key (customerKeyEncryptionFile) cannot be served by URL: the key would have to travel with every download")
	}
	req, err := s3.NewPresignClient(s.public).PresignGetObject(context.Background(),
		&s3.GetObjectInput{Bucket: &bucket, Key: &key}, s3.WithPresignExpires(ttl))
	if err != nil {
		return "", fmt.Errorf("signing a URL for s3://%s/%s: %w", bucket, key, err)
	}
	return req.URL, nil
}
