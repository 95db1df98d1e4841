package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// Defaults for AzureConfig's zero values.
const (
	DefaultAzureMaxAttempts = 10
	DefaultAzureMaxBackoff  = 20 * time.Second
	DefaultAzureBlockSize   = 16 << 20
	minAzureBlockSize       = 1 << 10
	maxAzureBlocks          = 50_000
)

// Environment variables read by ConfigFromEnv for Azure, besides the SDK's own (AZURE_CLIENT_ID,
// AZURE_TENANT_ID, AZURE_FEDERATED_TOKEN_FILE, … which azidentity's default credential reads).
const (
	EnvAzureAccount  = "AZURE_STORAGE_ACCOUNT"
	EnvAzureKey      = "AZURE_STORAGE_KEY"
	EnvAzureSASToken = "AZURE_STORAGE_SAS_TOKEN"
	// EnvAzureEndpoint overrides the Blob service URL of the account, for emulators: Azurite's is
	// http://127.0.0.1:10000/devstoreaccount1.
	EnvAzureEndpoint = "DELTAKEEPER_AZURE_BLOB_ENDPOINT"
	// EnvAzureMaxBackoff caps the wait between retried requests (a Go duration).
	EnvAzureMaxBackoff = "DELTAKEEPER_AZURE_MAX_BACKOFF"
)

// AzureConfig says how to reach Azure Blob Storage, ADLS Gen2 or OneLake. The zero value uses the
// SDK's default credential chain (environment service principal, AKS workload identity, managed
// identity, Azure CLI).
//
// It prints without its secrets (String, LogValue), but it is still a secret-bearing value: do not
// put it in a status, event or error.
type AzureConfig struct {
	// Account is the storage account of az:// locations (a name, or its host); abfss:// locations
	// name their own.
	Account string
	// AccountKey is a shared key of the account; SASToken a shared access signature ("sv=…&sig=…",
	// with or without the leading '?'). At most one of them; with neither, the default credential chain
	// provides Entra ID tokens (the only kind OneLake accepts).
	AccountKey string
	SASToken   string
	// Endpoint replaces the account's Blob service URL (https://<account>.blob.core.windows.net/), for
	// emulators such as Azurite ("http://127.0.0.1:10000/devstoreaccount1"). It must not carry
	// credentials.
	Endpoint string
	// MaxAttempts bounds the attempts per request (the SDK retries 408, 429, 500, 502, 503, 504 and
	// connection errors with exponential backoff); 0 means DefaultAzureMaxAttempts, 1 disables retries.
	MaxAttempts int
	// MaxBackoff caps the wait between attempts; 0 means DefaultAzureMaxBackoff.
	MaxBackoff time.Duration
	// BlockSize is the size of the blocks Create stages; 0 means DefaultAzureBlockSize. Objects
	// smaller than one block are uploaded with a single Put Blob.
	BlockSize int64
	// ReadAhead is as in S3Config; 0 means DefaultS3ReadAhead, negative disables read-ahead.
	ReadAhead int64

	envErr error
}

// String describes the configuration without credentials.
func (c AzureConfig) String() string {
	creds := "default credential chain"
	switch {
	case c.AccountKey != "":
		creds = "account key"
	case c.SASToken != "":
		creds = "SAS token"
	}
	endpoint := c.Endpoint
	if endpoint == "" {
		endpoint = "Azure"
	}
	return fmt.Sprintf("AzureConfig{account: %q, endpoint: %s, %s}", c.Account, endpoint, creds)
}

// GoString keeps %#v from printing the secret fields.
func (c AzureConfig) GoString() string { return c.String() }

// LogValue keeps slog from printing the secret fields.
func (c AzureConfig) LogValue() slog.Value { return slog.StringValue(c.String()) }

func (c AzureConfig) withDefaults() AzureConfig {
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultAzureMaxAttempts
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = DefaultAzureMaxBackoff
	}
	if c.BlockSize <= 0 {
		c.BlockSize = DefaultAzureBlockSize
	}
	if c.ReadAhead == 0 {
		c.ReadAhead = DefaultS3ReadAhead
	}
	c.SASToken = strings.TrimPrefix(c.SASToken, "?")
	return c
}

func (c AzureConfig) validate(accountHost string) error {
	if c.envErr != nil {
		return c.envErr
	}
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil {
			return errors.New("the Azure Blob endpoint is not a valid URL: use e.g. http://127.0.0.1:10000/devstoreaccount1")
		}
		if u.User != nil || u.RawQuery != "" {
			return errors.New("the Azure Blob endpoint URL must not contain user info or a query: pass the key or SAS token separately")
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("the Azure Blob endpoint %q must be an http:// or https:// URL with a host", c.Endpoint)
		}
	}
	if c.AccountKey != "" && c.SASToken != "" {
		return errors.New("both an Azure account key and a SAS token are set: give one of them")
	}
	if isOneLake(accountHost) && (c.AccountKey != "" || c.SASToken != "") {
		return errors.New("the OneLake endpoint accepts only Entra ID tokens: unset the account key and SAS token and use " +
			"workload identity, a service principal (AZURE_CLIENT_ID, AZURE_TENANT_ID, AZURE_CLIENT_SECRET) or a managed identity")
	}
	if c.BlockSize != 0 && c.BlockSize < minAzureBlockSize {
		return fmt.Errorf("the Azure block size %d is below the minimum of %d bytes", c.BlockSize, minAzureBlockSize)
	}
	return nil
}

// secrets are the values that must never appear in an error.
func (c AzureConfig) secrets() []string {
	out := []string{c.AccountKey, c.SASToken}
	if q, err := url.ParseQuery(c.SASToken); err == nil {
		if sig := q.Get("sig"); sig != "" {
			out = append(out, sig, url.QueryEscape(sig))
		}
	}
	return out
}

// newAzureContainerClient builds the client of one container (c defaulted and validated).
func newAzureContainerClient(c AzureConfig, accountHost, containerName string) (*container.Client, error) {
	service := azureBlobServiceURL(accountHost)
	if c.Endpoint != "" {
		service = strings.TrimSuffix(c.Endpoint, "/") + "/"
	}
	containerURL := service + url.PathEscape(containerName)
	retries := int32(c.MaxAttempts - 1)
	if retries == 0 {
		retries = -1 // 0 means the SDK's default of 3
	}
	opts := &container.ClientOptions{ClientOptions: azcore.ClientOptions{
		Retry: policy.RetryOptions{
			MaxRetries:    retries,
			RetryDelay:    min(800*time.Millisecond, c.MaxBackoff),
			MaxRetryDelay: c.MaxBackoff,
		},
		Transport: newCloudHTTPClient(),
	}}
	switch {
	case c.AccountKey != "":
		cred, err := container.NewSharedKeyCredential(azureAccountName(accountHost), c.AccountKey)
		if err != nil {
			return nil, errors.New("the Azure account key is not valid base64: copy it from the storage account's access keys")
		}
		return container.NewClientWithSharedKeyCredential(containerURL, cred, opts)
	case c.SASToken != "":
		return container.NewClientWithNoCredential(containerURL+"?"+c.SASToken, opts)
	}
	cred, err := azidentity.NewDefaultAzureCredential(nil)
	if err != nil {
		return nil, fmt.Errorf("no Azure credentials: set an account key or SAS token, or configure workload "+
			"identity or a service principal for the SDK's default credential chain: %w", err)
	}
	return container.NewClient(containerURL, cred, opts)
}
