package storage

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"
)

// Config holds what opening any location may need.
type Config struct {
	S3    S3Config
	Azure AzureConfig
	GCS   GCSConfig
}

// Environment variables read by ConfigFromEnv besides the standard AWS ones.
const (
	// EnvS3PathStyle = "true" addresses buckets path-style (endpoint/bucket/key), as most
	// S3-compatible servers need.
	EnvS3PathStyle = "DELTAKEEPER_S3_PATH_STYLE"
	// EnvS3MaxBackoff caps the wait between retried S3 requests (a Go duration, e.g. 2s), for
	// endpoints where the SDK's 20 s cap is too patient; tests of failure handling set it low.
	EnvS3MaxBackoff = "DELTAKEEPER_S3_MAX_BACKOFF"
)

// ConfigFromEnv reads the standard AWS environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN, AWS_REGION (else AWS_DEFAULT_REGION), AWS_ENDPOINT_URL_S3 (else
// AWS_ENDPOINT_URL), AWS_CA_BUNDLE and AWS_MAX_ATTEMPTS, plus DELTAKEEPER_S3_PATH_STYLE and
// DELTAKEEPER_S3_MAX_BACKOFF. Without
// AWS_ACCESS_KEY_ID the SDK's default credential chain (IRSA web identity, instance roles, shared
// config) applies when a store is opened.
//
// It never fails: an unusable value (DELTAKEEPER_S3_PATH_STYLE=yess) is reported by Open, with the
// variable's name, when an S3 location is opened.
func ConfigFromEnv() Config {
	c := S3Config{
		AccessKeyID:     os.Getenv("AWS_ACCESS_KEY_ID"),
		SecretAccessKey: os.Getenv("AWS_SECRET_ACCESS_KEY"),
		SessionToken:    os.Getenv("AWS_SESSION_TOKEN"),
		Region:          firstEnv("AWS_REGION", "AWS_DEFAULT_REGION"),
		Endpoint:        firstEnv("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
		CABundleFile:    os.Getenv("AWS_CA_BUNDLE"),
	}
	if v := os.Getenv(EnvS3PathStyle); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			c.envErr = fmt.Errorf("%s=%q is not a boolean: set it to true or false", EnvS3PathStyle, v)
		}
		c.UsePathStyle = b
	}
	if v := os.Getenv("AWS_MAX_ATTEMPTS"); v != "" && c.envErr == nil {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			c.envErr = fmt.Errorf("AWS_MAX_ATTEMPTS=%q is not a positive integer", v)
		}
		c.MaxAttempts = n
	}
	if v := os.Getenv(EnvS3MaxBackoff); v != "" && c.envErr == nil {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			c.envErr = fmt.Errorf("%s=%q is not a positive duration: set it to e.g. 2s", EnvS3MaxBackoff, v)
		}
		c.MaxBackoff = d
	}
	return Config{S3: c, Azure: azureConfigFromEnv(), GCS: gcsConfigFromEnv()}
}

// azureConfigFromEnv reads AZURE_STORAGE_ACCOUNT, AZURE_STORAGE_KEY, AZURE_STORAGE_SAS_TOKEN,
// DELTAKEEPER_AZURE_BLOB_ENDPOINT and DELTAKEEPER_AZURE_MAX_BACKOFF; the default credential chain reads
// its own variables (AZURE_CLIENT_ID, AZURE_TENANT_ID, AZURE_FEDERATED_TOKEN_FILE, …) when a store opens.
func azureConfigFromEnv() AzureConfig {
	c := AzureConfig{
		Account:    os.Getenv(EnvAzureAccount),
		AccountKey: os.Getenv(EnvAzureKey),
		SASToken:   os.Getenv(EnvAzureSASToken),
		Endpoint:   os.Getenv(EnvAzureEndpoint),
	}
	c.MaxBackoff, c.envErr = durationEnv(EnvAzureMaxBackoff)
	return c
}

// gcsConfigFromEnv reads STORAGE_EMULATOR_HOST (the Go SDK's emulator variable) and
// DELTAKEEPER_GCS_MAX_BACKOFF; Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, GKE
// workload identity, the metadata server) are looked up when a store opens.
func gcsConfigFromEnv() GCSConfig {
	c := GCSConfig{Endpoint: os.Getenv(EnvGCSEmulatorHost)}
	c.MaxBackoff, c.envErr = durationEnv(EnvGCSMaxBackoff)
	return c
}

// durationEnv parses an optional positive duration variable.
func durationEnv(name string) (time.Duration, error) {
	v := os.Getenv(name)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q is not a positive duration: set it to e.g. 2s", name, v)
	}
	return d, nil
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// Open returns the store for a table location: "s3://bucket/prefix" (also s3a:// and s3n://, as
// Spark writes them), an Azure location (abfss://container@account.dfs.core.windows.net/prefix, az://,
// wasbs://, OneLake), "gs://bucket/prefix", "file:///abs/path", or a plain local path (made absolute). The location is taken
// as raw bytes: it is not percent-decoded.
func Open(ctx context.Context, location string, cfg Config) (Store, error) {
	loc, err := ParseLocation(location)
	if err != nil {
		return nil, err
	}
	return openLocation(ctx, loc, cfg)
}

func openLocation(ctx context.Context, loc Location, cfg Config) (Store, error) {
	switch loc.Scheme {
	case SchemeS3:
		return NewS3(ctx, cfg.S3, loc.Bucket, loc.Path)
	case SchemeAzure:
		loc, err := loc.resolve(cfg)
		if err != nil {
			return nil, err
		}
		return NewAzure(ctx, cfg.Azure, loc.Account, loc.Bucket, loc.Path)
	case SchemeGCS:
		return NewGCS(ctx, cfg.GCS, loc.Bucket, loc.Path)
	case SchemeFile:
		return NewLocal(loc.Path)
	}
	return nil, fmt.Errorf("unsupported location scheme %q", loc.Scheme)
}
