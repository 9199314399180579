package recording

import (
	"errors"
	"flag"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Options say where recordings are kept: local files served by the REST
// API with signed links, or an S3 bucket with presigned links.
type Options struct {
	// Store is "local" or "s3".
	Store string
	// Dir holds the local files (the process fills it in from --dev when
	// empty).
	Dir string
	// SigningKeyFile holds the key that signs local recording links.
	SigningKeyFile string
	// S3 is the bucket with Store "s3"; Insecure talks plain http to it.
	S3       S3Config
	Insecure bool
	// MaxBytes bounds one call's recording, its header included (0: no
	// bound): the call goes on past it, unrecorded.
	MaxBytes int64
}

// DefaultMaxBytes is about 70 minutes of a call: stereo 8 kHz 16-bit
// audio is 115 MB an hour.
const DefaultMaxBytes = 128 << 20

// DefaultOptions keep recordings in local files.
var DefaultOptions = Options{Store: "local", S3: S3Config{Region: DefaultS3Region}, MaxBytes: DefaultMaxBytes}

// BindFlags binds the recording settings to fs, each defaulting to its
// value in o (DefaultOptions for the binary).
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Store, "recording-store", o.Store, "Where recordings are kept: local (files in --recording-dir, links served by the REST API) "+
		"or s3 (links are presigned S3 URLs; credentials from env AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY).")
	fs.StringVar(&o.Dir, "recording-dir", o.Dir, "Directory for recordings (default /var/lib/switchboard/recordings; <dev-dir>/recordings with --dev).")
	fs.StringVar(&o.SigningKeyFile, "recording-signing-key-file", o.SigningKeyFile,
		"File holding the key that signs recording links. Env SWITCHBOARD_RECORDING_SIGNING_KEY holds it directly.")
	fs.StringVar(&o.S3.Endpoint, "s3-endpoint", o.S3.Endpoint, "With --recording-store=s3: the S3 endpoint, host[:port] without scheme (e.g. s3.eu-west-1.amazonaws.com).")
	fs.StringVar(&o.S3.Bucket, "s3-bucket", o.S3.Bucket, "With --recording-store=s3: the bucket holding recordings; it must exist.")
	fs.StringVar(&o.S3.Region, "s3-region", o.S3.Region, "With --recording-store=s3: the bucket's region.")
	fs.StringVar(&o.S3.Prefix, "s3-prefix", o.S3.Prefix, "With --recording-store=s3: a key prefix for the recordings in the bucket (e.g. switchboard/prod).")
	fs.BoolVar(&o.Insecure, "s3-insecure", o.Insecure, "With --recording-store=s3: plain http instead of https, for a local S3 gateway only.")
	fs.Func("recording-max-bytes", "The largest recording of one call, e.g. 128Mi (the default, about 70 minutes; 0: no bound). "+
		"A call that reaches it goes on unrecorded from there; its Call has a RecordingTruncated event.",
		func(v string) error {
			q, err := resource.ParseQuantity(v)
			if err != nil || q.Sign() < 0 {
				return fmt.Errorf("want a size such as 128Mi or 0, got %q", v)
			}
			o.MaxBytes = q.Value()
			return nil
		})
}

// S3Config returns the S3 store's configuration with Store "s3", nil for
// local files, or why the settings do not fit together. The credentials
// come from the environment only (getenv): a Secret in a Deployment, never
// flags, which show in the process list.
func (o Options) S3Config(getenv func(string) string) (*S3Config, error) {
	switch o.Store {
	case "local":
		if o.S3.Endpoint != "" || o.S3.Bucket != "" || o.S3.Prefix != "" || o.Insecure {
			return nil, errors.New("--s3-endpoint, --s3-bucket, --s3-prefix and --s3-insecure need --recording-store=s3")
		}
		return nil, nil
	case "s3":
	default:
		return nil, fmt.Errorf("--recording-store: want local or s3, got %q", o.Store)
	}
	if o.S3.Endpoint == "" || o.S3.Bucket == "" {
		return nil, errors.New("--recording-store=s3 needs --s3-endpoint and --s3-bucket")
	}
	cfg := o.S3
	cfg.Secure = !o.Insecure
	cfg.AccessKey, cfg.SecretKey = getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
	if cfg.AccessKey == "" || cfg.SecretKey == "" {
		return nil, errors.New("--recording-store=s3 needs the S3 credentials in the environment variables AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	}
	return &cfg, nil
}
