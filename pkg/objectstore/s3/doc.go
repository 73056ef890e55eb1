// Package s3 is Salvor's built-in S3 object store, salvor.dev/s3, for AWS S3
// and S3-compatible servers (MinIO, Ceph, ...).
//
// Its config keys are those of Velero's AWS plugin, so a Velero location's
// config carries over: region, s3Url (an S3-compatible endpoint),
// s3ForcePathStyle, insecureSkipTLSVerify, caCert (PEM), credentialsFile (an
// AWS shared-credentials file), profile, and publicUrl (the endpoint used in
// signed URLs), and for server-side encryption serverSideEncryption (AES256,
// aws:kms, aws:kms:dsse), kmsKeyId and customerKeyEncryptionFile (SSE-C: a
// file of exactly 32 raw bytes, sent with every write and read; such
// objects cannot be served by signed URL). Without credentialsFile the SDK's default chain applies
// (environment, shared config, instance roles). Uploads of unknown length —
// a tarball streamed while it is written — go as multipart uploads.
package s3
