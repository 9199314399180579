package recording

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

const (
	// DefaultS3Region is used when S3Config.Region is empty.
	DefaultS3Region = "us-east-1"
	// MaxS3LinkTTL is the longest a presigned S3 link can be valid (SigV4).
	MaxS3LinkTTL = 7 * 24 * time.Hour

	// s3PartSize bounds the memory one Put uses: a recording up to this size
	// is read into memory and sent in one PUT with its length; a longer one
	// is streamed as a multipart upload of parts this size (up to 10,000
	// parts, 160 GiB). Without a part size, minio-go would buffer parts of
	// over 500 MiB for a stream of unknown length.
	s3PartSize = 16 << 20
	// s3CheckTimeout bounds the bucket check at start, which minio-go would
	// otherwise retry for a long time against an endpoint that is down.
	s3CheckTimeout = 30 * time.Second
	amzDateFormat  = "20060102T150405Z"
)

// S3Config configures an S3 store. AccessKey and SecretKey are credentials:
// the store never logs them, and its errors never contain the secret key.
type S3Config struct {
	// Endpoint is host[:port] without a scheme, e.g. s3.eu-west-1.amazonaws.com
	// or 127.0.0.1:7070.
	Endpoint string
	// Secure uses https (false: http, for local gateways only).
	Secure bool
	// Region of the bucket; DefaultS3Region when empty. Links are signed for
	// it without asking the server.
	Region string
	// Bucket holds the recordings; it must exist.
	Bucket string
	// Prefix, if set, is prepended to every key ("a/b" stores key k as
	// "a/b/k"). It follows the key syntax (see ValidateKey).
	Prefix    string
	AccessKey string
	SecretKey string
}

// S3 is a Store in an S3 bucket (AWS, or any S3-compatible server such as
// versitygw or MinIO). Its links are presigned S3 GET URLs: like every link
// of this package they are computed when a call is rendered and never
// stored, so a link in an API response is always fresh, and rotating the
// credentials only breaks links already handed out. The bucket needs no
// public access; a link works for whoever holds it until it expires.
//
// The credentials need s3:ListBucket (the start check, and 404 rather than
// 403 for a missing object), s3:GetObject and s3:PutObject on the bucket
// (under Prefix), plus s3:AbortMultipartUpload for recordings over 16 MiB
// and s3:DeleteObject when recordings expire (--recording-retention).
type S3 struct {
	client   *minio.Client
	bucket   string
	prefix   string // "" or ending in "/"
	endpoint string // for errors
	origin   string // of its links: the endpoint's, or the bucket's own host
}

var _ Store = (*S3)(nil)

// NewS3 checks cfg, connects and checks that the bucket exists and is
// accessible with the credentials. Buckets are addressed path-style
// (endpoint/bucket/key), as versitygw and other gateways expect, except on
// AWS and Google endpoints, where minio-go picks virtual-host style.
func NewS3(ctx context.Context, cfg S3Config) (*S3, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	region := cfg.Region
	if region == "" {
		region = DefaultS3Region
	}
	client, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure:       cfg.Secure,
		Region:       region,
		BucketLookup: minio.BucketLookupAuto,
	})
	if err != nil {
		return nil, fmt.Errorf("recording: S3 endpoint %q: %w", cfg.Endpoint, err)
	}
	s := &S3{client: client, bucket: cfg.Bucket, endpoint: cfg.Endpoint}
	if p := strings.Trim(cfg.Prefix, "/"); p != "" {
		s.prefix = p + "/"
	}
	if err := s.checkBucket(ctx); err != nil {
		return nil, err
	}
	// Links to a bucket addressed virtual-host style are on the bucket's
	// own host, so the origin is read from one (signing calls no server).
	probe, err := client.PresignedGetObject(ctx, s.bucket, s.prefix+"origin", time.Minute, nil)
	if err != nil {
		return nil, s.wrap(err, "signing a link")
	}
	s.origin = originOf(probe)
	return s, nil
}

// Origin is the scheme://host[:port] of its presigned links.
func (s *S3) Origin() string { return s.origin }

func (cfg S3Config) validate() error {
	switch {
	case cfg.Endpoint == "":
		return errors.New("recording: S3 store needs an endpoint (host[:port])")
	case strings.Contains(cfg.Endpoint, "://") || strings.Contains(cfg.Endpoint, "/"):
		return fmt.Errorf("recording: S3 endpoint %q must be host[:port], without scheme or path (https is the default)", cfg.Endpoint)
	case cfg.Bucket == "":
		return errors.New("recording: S3 store needs a bucket")
	case cfg.AccessKey == "" || cfg.SecretKey == "":
		return errors.New("recording: S3 store needs an access key and a secret key")
	}
	if p := strings.Trim(cfg.Prefix, "/"); p != "" {
		if err := ValidateKey(p); err != nil {
			return fmt.Errorf("recording: S3 prefix %q: segments of letters, digits, '.', '_' and '-' only", cfg.Prefix)
		}
	}
	return nil
}

// checkBucket lists one key under the prefix: unlike a HEAD of the bucket,
// a listing's error has a body, so a missing bucket is told apart from
// unknown credentials (which some gateways answer with 404 too). It needs
// s3:ListBucket, which Link needs anyway: without it AWS answers a HEAD of a
// missing object with 403 instead of 404.
func (s *S3) checkBucket(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s3CheckTimeout)
	defer cancel() // also ends the listing after its first item
	for obj := range s.client.ListObjectsIter(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix, MaxKeys: 1}) {
		if obj.Err != nil {
			return s.wrap(obj.Err, "checking the bucket")
		}
		break
	}
	return nil
}

// Put stores r under key, replacing any object there (S3 PUTs are atomic:
// readers see the old object or the new one, never a part).
func (s *S3) Put(ctx context.Context, key, contentType string, r io.Reader) (Object, error) {
	if err := ValidateKey(key); err != nil {
		return Object{}, err
	}
	ct, err := normalizeContentType(key, contentType)
	if err != nil {
		return Object{}, err
	}
	r = ctxReader{ctx: ctx, r: r}
	// Read one part ahead: most recordings fit, and go out in one PUT with a
	// known length.
	head, err := io.ReadAll(io.LimitReader(r, s3PartSize+1))
	if err != nil {
		return Object{}, fmt.Errorf("recording: read %q: %w", key, err)
	}
	size, body := int64(len(head)), io.Reader(bytes.NewReader(head))
	if size > s3PartSize {
		size, body = -1, io.MultiReader(body, r)
	}
	info, err := s.client.PutObject(ctx, s.bucket, s.prefix+key, body, size, minio.PutObjectOptions{
		ContentType: ct, PartSize: s3PartSize,
		// Over http minio-go would otherwise sign the body in aws-chunked
		// encoding, which some gateways (versitygw) keep as the object's
		// Content-Encoding, so browsers fail to decode the download. The
		// body is checked with Content-MD5 instead, as over https.
		DisableContentSha256: true, SendContentMd5: true,
	})
	if err != nil {
		return Object{}, s.wrap(err, fmt.Sprintf("storing %q", key))
	}
	return Object{Key: key, ContentType: ct, SizeBytes: info.Size}, nil
}

// Link presigns a GET of key valid for ttl (1 s to MaxS3LinkTTL, whole
// seconds). It returns ErrNotFound if key holds no recording: presigning
// alone works offline, so the object is checked first.
func (s *S3) Link(ctx context.Context, key string, ttl time.Duration) (Link, error) {
	if err := ValidateKey(key); err != nil {
		return Link{}, err
	}
	if ttl < time.Second || ttl > MaxS3LinkTTL {
		return Link{}, fmt.Errorf("recording: S3 link ttl must be between 1s and %s, got %s", MaxS3LinkTTL, ttl)
	}
	if _, err := s.client.StatObject(ctx, s.bucket, s.prefix+key, minio.StatObjectOptions{}); err != nil {
		if resp := minio.ToErrorResponse(err); resp.StatusCode == http.StatusNotFound || resp.Code == minio.NoSuchKey {
			return Link{}, ErrNotFound
		}
		return Link{}, s.wrap(err, fmt.Sprintf("checking %q", key))
	}
	start := time.Now()
	u, err := s.client.PresignedGetObject(ctx, s.bucket, s.prefix+key, ttl, nil)
	if err != nil {
		return Link{}, s.wrap(err, fmt.Sprintf("signing a link to %q", key))
	}
	return Link{URL: u.String(), ExpiresAt: presignedExpiry(u.Query(), start.Add(ttl))}, nil
}

// Delete removes the object under key. S3 answers a delete of a missing
// key with success, so deleting twice is fine. It needs s3:DeleteObject on
// the bucket (under Prefix).
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if err := s.client.RemoveObject(ctx, s.bucket, s.prefix+key, minio.RemoveObjectOptions{}); err != nil {
		if resp := minio.ToErrorResponse(err); resp.Code == minio.NoSuchKey {
			return nil
		}
		return s.wrap(err, fmt.Sprintf("deleting %q", key))
	}
	return nil
}

// presignedExpiry reads when a SigV4 presigned URL stops working (its
// signing time to the second plus whole seconds of validity), falling back
// to estimate.
func presignedExpiry(q url.Values, estimate time.Time) time.Time {
	signed, err := time.Parse(amzDateFormat, q.Get("X-Amz-Date"))
	if err != nil {
		return estimate.UTC()
	}
	secs, err := strconv.ParseInt(q.Get("X-Amz-Expires"), 10, 64)
	if err != nil {
		return estimate.UTC()
	}
	return signed.Add(time.Duration(secs) * time.Second).UTC()
}

// wrap names the bucket and endpoint and explains the common failures.
// minio-go's errors carry the server's message, the bucket and the key,
// never the credentials.
func (s *S3) wrap(err error, doing string) error {
	where := fmt.Sprintf("recording: S3 bucket %q at %s: %s", s.bucket, s.endpoint, doing)
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.Code == minio.NoSuchBucket:
		return fmt.Errorf("%s: the bucket does not exist; create it first: %w", where, err)
	case resp.StatusCode == http.StatusForbidden || credentialErrors[resp.Code]:
		return fmt.Errorf("%s: access denied (check the access key, the secret key and the bucket policy): %w", where, err)
	}
	return fmt.Errorf("%s: %w", where, err)
}

// credentialErrors are the S3 error codes for unknown or wrong credentials;
// versitygw answers an unknown access key with XAdminUserNotFound (404).
var credentialErrors = map[string]bool{
	"InvalidAccessKeyId": true, "SignatureDoesNotMatch": true, minio.AccessDenied: true,
	"XAdminUserNotFound": true, "InvalidToken": true, "ExpiredToken": true,
}
