package s3

import (
	"crypto/md5" //nolint:gosec // S3's SSE-C protocol checks the key with its MD5
	"encoding/base64"
	"errors"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// sse is how the store asks S3 to encrypt what it writes, from Velero's
// AWS config keys: serverSideEncryption (AES256, aws:kms, aws:kms:dsse),
// kmsKeyId (a KMS key; implies aws:kms), customerKeyEncryptionFile (a
// file holding exactly 32 bytes: a customer-provided key, SSE-C, which
// must then accompany every read too).
type sse struct {
	algorithm types.ServerSideEncryption
	kmsKeyID  string
	// customerKey and customerKeyMD5 are base64, as S3 wants them.
	customerKey, customerKeyMD5 string
}

func parseSSE(cfg map[string]string) (sse, error) {
	var out sse
	alg, kms, file := cfg["serverSideEncryption"], cfg["kmsKeyId"], cfg["customerKeyEncryptionFile"]
	if file != "" && (kms != "" || alg != "") {
		return out, errors.New("config customerKeyEncryptionFile (SSE-C) cannot be combined with kmsKeyId or serverSideEncryption: S3 encrypts an object one way")
	}
	switch types.ServerSideEncryption(alg) {
	case "", types.ServerSideEncryptionAes256, types.ServerSideEncryptionAwsKms, types.ServerSideEncryptionAwsKmsDsse:
	default:
		return out, fmt.Errorf("config serverSideEncryption=%q: want AES256, aws:kms or aws:kms:dsse", alg)
	}
	out.algorithm = types.ServerSideEncryption(alg)
	if kms != "" {
		if alg == string(types.ServerSideEncryptionAes256) {
			return out, errors.New("config kmsKeyId needs serverSideEncryption aws:kms (or unset), not AES256")
		}
		if alg == "" {
			out.algorithm = types.ServerSideEncryptionAwsKms
		}
		out.kmsKeyID = kms
	}
	if file != "" {
		key, err := os.ReadFile(file)
		if err != nil {
			return out, fmt.Errorf("config customerKeyEncryptionFile: %w", err)
		}
		if len(key) != 32 {
			// A longer file is not cut short: a key written as hex or
			// base64 would lose most of its strength silently.
			return out, fmt.Errorf("config customerKeyEncryptionFile %s holds %d bytes: an SSE-C key is exactly 32 raw bytes (not hex or base64)", file, len(key))
		}
		sum := md5.Sum(key) //nolint:gosec // see the import
		out.customerKey = base64.StdEncoding.EncodeToString(key)
		out.customerKeyMD5 = base64.StdEncoding.EncodeToString(sum[:])
	}
	return out, nil
}

func (e sse) put(in *s3.PutObjectInput) {
	if e.algorithm != "" {
		in.ServerSideEncryption = e.algorithm
	}
	if e.kmsKeyID != "" {
		in.SSEKMSKeyId = aws.String(e.kmsKeyID)
	}
	if e.customerKey != "" {
		in.SSECustomerAlgorithm, in.SSECustomerKey, in.SSECustomerKeyMD5 = aws.String("AES256"), aws.String(e.customerKey), aws.String(e.customerKeyMD5)
	}
}

func (e sse) get(in *s3.GetObjectInput) {
	if e.customerKey != "" {
		in.SSECustomerAlgorithm, in.SSECustomerKey, in.SSECustomerKeyMD5 = aws.String("AES256"), aws.String(e.customerKey), aws.String(e.customerKeyMD5)
	}
}

func (e sse) head(in *s3.HeadObjectInput) {
	if e.customerKey != "" {
		in.SSECustomerAlgorithm, in.SSECustomerKey, in.SSECustomerKeyMD5 = aws.String("AES256"), aws.String(e.customerKey), aws.String(e.customerKeyMD5)
	}
}
