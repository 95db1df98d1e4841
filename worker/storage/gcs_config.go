package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/api/option"
	htransport "google.golang.org/api/transport/http"
)

// Defaults for GCSConfig's zero values.
const (
	DefaultGCSMaxAttempts = 10
	DefaultGCSMaxBackoff  = 20 * time.Second
	DefaultGCSChunkSize   = 16 << 20
	gcsChunkGranularity   = 256 << 10 // resumable upload chunks are multiples of 256 KiB
)

// Environment variables read by ConfigFromEnv for GCS, besides Application Default Credentials'
// GOOGLE_APPLICATION_CREDENTIALS.
const (
	// EnvGCSEmulatorHost is the Go SDK's own emulator variable ("127.0.0.1:4443" or a URL).
	EnvGCSEmulatorHost = "STORAGE_EMULATOR_HOST"
	// EnvGCSMaxBackoff caps the wait between retried requests (a Go duration).
	EnvGCSMaxBackoff = "DELTAKEEPER_GCS_MAX_BACKOFF"
)

// GCSConfig says how to reach Google Cloud Storage. The zero value uses Application Default
// Credentials (GOOGLE_APPLICATION_CREDENTIALS, GKE workload identity, the metadata server).
//
// It prints without its secrets (String, LogValue), but it is still a secret-bearing value: do not
// put it in a status, event or error.
type GCSConfig struct {
	// Endpoint is an emulator's address ("http://127.0.0.1:4443"); requests to it are unauthenticated.
	Endpoint string
	// CredentialsJSON is a service-account key (the JSON file Google issues), e.g. from a Secret;
	// CredentialsFile the path of one. At most one; with neither, Application Default Credentials.
	CredentialsJSON []byte
	CredentialsFile string
	// MaxAttempts bounds the attempts per request (the SDK retries 408, 429, 5xx and connection
	// errors with exponential backoff); 0 means DefaultGCSMaxAttempts, 1 disables retries.
	MaxAttempts int
	// MaxBackoff caps the wait between attempts; 0 means DefaultGCSMaxBackoff.
	MaxBackoff time.Duration
	// ChunkSize is the resumable upload chunk of Create (rounded up to a multiple of 256 KiB); 0 means
	// DefaultGCSChunkSize. Objects smaller than one chunk are uploaded in a single request.
	ChunkSize int
	// ReadAhead is as in S3Config; 0 means DefaultS3ReadAhead, negative disables read-ahead.
	ReadAhead int64

	envErr error
}

// String describes the configuration without credentials.
func (c GCSConfig) String() string {
	creds := "application default credentials"
	switch {
	case c.Endpoint != "":
		creds = "no credentials (emulator)"
	case len(c.CredentialsJSON) > 0:
		creds = "service-account key"
	case c.CredentialsFile != "":
		creds = "service-account key file " + c.CredentialsFile
	}
	endpoint := c.Endpoint
	if endpoint == "" {
		endpoint = "Google Cloud Storage"
	}
	return fmt.Sprintf("GCSConfig{endpoint: %s, %s}", endpoint, creds)
}

// GoString keeps %#v from printing the secret fields.
func (c GCSConfig) GoString() string { return c.String() }

// LogValue keeps slog from printing the secret fields.
func (c GCSConfig) LogValue() slog.Value { return slog.StringValue(c.String()) }

func (c GCSConfig) withDefaults() GCSConfig {
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultGCSMaxAttempts
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = DefaultGCSMaxBackoff
	}
	if c.ChunkSize <= 0 {
		c.ChunkSize = DefaultGCSChunkSize
	}
	c.ChunkSize = roundUp(c.ChunkSize, gcsChunkGranularity)
	if c.ReadAhead == 0 {
		c.ReadAhead = DefaultS3ReadAhead
	}
	return c
}

func roundUp(n, unit int) int { return (n + unit - 1) / unit * unit }

func (c GCSConfig) validate() error {
	if c.envErr != nil {
		return c.envErr
	}
	if c.Endpoint != "" {
		if _, err := gcsEndpointURL(c.Endpoint); err != nil {
			return err
		}
	}
	if len(c.CredentialsJSON) > 0 && c.CredentialsFile != "" {
		return errors.New("both a GCS service-account key and a key file are set: give one of them")
	}
	if len(c.CredentialsJSON) > 0 {
		var key struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(c.CredentialsJSON, &key) != nil || key.Type != "service_account" {
			// Never echo the JSON: it holds the private key.
			return errors.New("the GCS credentials are not a service-account key (JSON with \"type\": \"service_account\"): " +
				"create a key for the service account and store the whole file")
		}
	}
	return nil
}

// gcsEndpointURL turns an emulator address into the JSON API's base URL.
func gcsEndpointURL(endpoint string) (string, error) {
	if !strings.Contains(endpoint, "://") {
		endpoint = "http://" + endpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", errors.New("GCS endpoint is not a valid address: use e.g. 127.0.0.1:4443 or http://127.0.0.1:4443")
	}
	if u.User != nil {
		return "", errors.New("GCS endpoint URL must not contain user info")
	}
	u.Path = "/storage/v1/"
	return u.String(), nil
}

// secrets are the parts of a service-account key that must never appear in an error.
func (c GCSConfig) secrets() []string {
	var key struct {
		PrivateKey   string `json:"private_key"`
		PrivateKeyID string `json:"private_key_id"`
	}
	if len(c.CredentialsJSON) == 0 || json.Unmarshal(c.CredentialsJSON, &key) != nil {
		return nil
	}
	out := []string{key.PrivateKeyID, key.PrivateKey}
	// A PEM key could be echoed in part: each of its base64 lines is secret too.
	for line := range strings.Lines(key.PrivateKey) {
		if line = strings.TrimSpace(line); len(line) >= 16 && !strings.HasPrefix(line, "-----") {
			out = append(out, line)
		}
	}
	return out
}

// newGCSClient builds an SDK client from c (defaulted and validated). Requests go through
// countingTransport (below the SDK's authentication and retries) so PutIfAbsent can tell a retried
// call; reads use the JSON API, which emulators serve as well as Google does.
func newGCSClient(ctx context.Context, c GCSConfig) (*storage.Client, error) {
	hc := newCloudHTTPClient()
	opts := []option.ClientOption{storage.WithJSONReads()}
	if c.Endpoint != "" {
		ep, _ := gcsEndpointURL(c.Endpoint)
		opts = append(opts, option.WithEndpoint(ep), option.WithoutAuthentication(), option.WithHTTPClient(hc))
	} else {
		authOpts := []option.ClientOption{option.WithScopes(storage.ScopeFullControl)}
		switch {
		case len(c.CredentialsJSON) > 0:
			authOpts = append(authOpts, option.WithAuthCredentialsJSON(option.ServiceAccount, c.CredentialsJSON))
		case c.CredentialsFile != "":
			authOpts = append(authOpts, option.WithAuthCredentialsFile(option.ServiceAccount, c.CredentialsFile))
		}
		tr, err := htransport.NewTransport(ctx, hc.Transport, authOpts...)
		if err != nil {
			return nil, fmt.Errorf("no usable GCS credentials: give a service-account key, or configure GKE workload "+
				"identity or GOOGLE_APPLICATION_CREDENTIALS for Application Default Credentials: %w", err)
		}
		opts = append(opts, option.WithHTTPClient(&http.Client{Transport: tr}))
	}
	client, err := storage.NewClient(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("creating the GCS client: %w", err)
	}
	// RetryAlways: besides the idempotent calls the SDK retries anyway (reads, conditional writes), an
	// unconditional Put rewrites the same bytes and a Delete of a gone object is not an error here, so
	// retrying them is safe too.
	client.SetRetry(
		storage.WithPolicy(storage.RetryAlways),
		storage.WithMaxAttempts(c.MaxAttempts),
		storage.WithBackoff(gax.Backoff{Initial: min(100*time.Millisecond, c.MaxBackoff), Max: c.MaxBackoff, Multiplier: 2}),
	)
	return client, nil
}
