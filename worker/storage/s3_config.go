package storage

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Defaults for S3Config's zero values.
const (
	DefaultS3MaxAttempts = 10
	DefaultS3MaxBackoff  = 20 * time.Second
	DefaultS3PartSize    = 16 << 20
	DefaultS3ReadAhead   = 1 << 20
	minS3PartSize        = 1 << 10 // AWS wants 5 MiB; smaller sizes are for tests against other servers
)

// S3Config says how to reach S3 or an S3-compatible server. The zero value talks to AWS with the SDK's
// default credential chain (environment, shared config, IRSA web identity, ECS/EC2 instance roles).
//
// It prints without its secrets (String, LogValue), but it is still a secret-bearing value: do not
// put it in a status, event or error.
type S3Config struct {
	// Endpoint is the base URL of an S3-compatible server ("https://minio.example:9000"); empty means
	// AWS. It must not carry credentials (user:pass@).
	Endpoint string
	// Region for request signing; empty means the SDK's (AWS_REGION, shared config), else us-east-1.
	Region string
	// UsePathStyle addresses buckets as endpoint/bucket/key instead of bucket.endpoint/key, as most
	// S3-compatible servers need.
	UsePathStyle bool
	// CABundleFile is a PEM file of extra CAs to trust, in addition to the system roots, for servers
	// with a private CA.
	CABundleFile string
	// AccessKeyID and SecretAccessKey (and SessionToken for temporary credentials) are static
	// credentials; when AccessKeyID is empty the SDK's default credential chain is used instead.
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	// MaxAttempts bounds the attempts per request, retrying throttling (503 SlowDown, 429), 5xx and
	// connection errors with exponential backoff and jitter; 0 means DefaultS3MaxAttempts, 1 disables
	// retries.
	MaxAttempts int
	// MaxBackoff caps the wait between attempts; 0 means DefaultS3MaxBackoff.
	MaxBackoff time.Duration
	// PartSize is the multipart upload part size for Create; 0 means DefaultS3PartSize. Objects smaller
	// than one part are uploaded with a single PutObject. AWS requires at least 5 MiB.
	PartSize int64
	// ReadAhead is how much Open's readers fetch around a small read, so sequential small reads (a
	// Parquet reader's pages) cost one request per ReadAhead bytes; 0 means DefaultS3ReadAhead,
	// negative disables read-ahead. Each open reader keeps up to 4 such windows until closed.
	ReadAhead int64

	// envErr records an unusable value ConfigFromEnv found, reported when a store is opened so that
	// ConfigFromEnv itself stays a plain value constructor.
	envErr error
}

// String describes the configuration without credentials.
func (c S3Config) String() string {
	creds := "default credential chain"
	if c.AccessKeyID != "" {
		creds = "static credentials"
	}
	endpoint := c.Endpoint
	if endpoint == "" {
		endpoint = "AWS"
	}
	return fmt.Sprintf("S3Config{endpoint: %s, region: %q, path-style: %t, ca-bundle: %q, %s}",
		endpoint, c.Region, c.UsePathStyle, c.CABundleFile, creds)
}

// GoString keeps %#v from printing the secret fields.
func (c S3Config) GoString() string { return c.String() }

// LogValue keeps slog from printing the secret fields.
func (c S3Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

func (c S3Config) withDefaults() S3Config {
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultS3MaxAttempts
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = DefaultS3MaxBackoff
	}
	if c.PartSize <= 0 {
		c.PartSize = DefaultS3PartSize
	}
	if c.ReadAhead == 0 {
		c.ReadAhead = DefaultS3ReadAhead
	}
	return c
}

func (c S3Config) validate() error {
	if c.envErr != nil {
		return c.envErr
	}
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil {
			// url.Parse echoes its input, which may hold a password: report only the kind of problem.
			return errors.New("S3 endpoint is not a valid URL: use e.g. https://host:9000")
		}
		if u.User != nil {
			return errors.New("S3 endpoint URL must not contain user info: pass credentials as access key and secret")
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("S3 endpoint %q must be an http:// or https:// URL with a host", c.Endpoint)
		}
	}
	if c.AccessKeyID != "" && c.SecretAccessKey == "" {
		return errors.New("S3 access key ID is set but the secret access key is empty: set both, or neither to use the default credential chain")
	}
	if c.PartSize != 0 && c.PartSize < minS3PartSize {
		return fmt.Errorf("S3 part size %d is below the minimum of %d bytes (AWS needs 5 MiB)", c.PartSize, minS3PartSize)
	}
	return nil
}

// newS3Client builds an SDK client from c (already defaulted and validated).
func newS3Client(ctx context.Context, c S3Config) (*s3.Client, error) {
	httpClient, err := newHTTPClient(c.CABundleFile)
	if err != nil {
		return nil, err
	}
	opts := []func(*config.LoadOptions) error{
		config.WithHTTPClient(httpClient),
		config.WithRetryer(func() aws.Retryer { return newRetryer(c.MaxAttempts, c.MaxBackoff) }),
	}
	if c.Region != "" {
		opts = append(opts, config.WithRegion(c.Region))
	}
	if c.AccessKeyID != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, c.SessionToken)))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("loading AWS configuration (environment, shared config files): %w", err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = "us-east-1" // S3-compatible servers ignore it, but SigV4 needs one
	}
	return s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if c.Endpoint != "" {
			o.BaseEndpoint = aws.String(c.Endpoint)
		}
		o.UsePathStyle = c.UsePathStyle
		// Ranged GETs and most S3-compatible servers return no full-object checksum; the SDK would
		// log that on every read.
		o.DisableLogOutputChecksumValidationSkipped = true
	}), nil
}

// newRetryer is the SDK's standard retryer (exponential backoff with jitter, throttling codes such as
// SlowDown, 5xx, connection errors) with two changes for a batch worker: 429 counts as throttling
// even when the server sends no error code, and the client-side retry quota is off. The quota exists
// to shed load during an outage, but it is shared by all requests of a client, so a burst of
// throttled concurrent Parquet reads would otherwise exhaust it and fail requests that were allowed
// more attempts.
func newRetryer(maxAttempts int, maxBackoff time.Duration) aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = maxAttempts
		o.MaxBackoff = maxBackoff
		o.RateLimiter = ratelimit.None
		o.Retryables = append(o.Retryables, retry.RetryableHTTPStatusCode{
			Codes: map[int]struct{}{http.StatusTooManyRequests: {}},
		})
	})
}

// newHTTPClient returns the SDK's buildable client trusting the system roots plus caFile's CAs. The
// pool is set even without caFile: the SDK's own AWS_CA_BUNDLE handling appends to an existing pool but
// would otherwise start from an empty one, dropping the system roots (which breaks mixed setups such
// as a private-CA endpoint plus STS on AWS for IRSA).
func newHTTPClient(caFile string) (*awshttp.BuildableClient, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("reading S3 CA bundle: %w", err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("S3 CA bundle %s holds no PEM certificates: give a file of -----BEGIN CERTIFICATE----- blocks", caFile)
		}
	}
	return awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		// Parquet readers issue many concurrent ranged GETs against one host.
		tr.MaxIdleConnsPerHost = 64
		if tr.TLSClientConfig == nil {
			tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		tr.TLSClientConfig.RootCAs = pool
	}), nil
}
