package storage

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Location schemes.
const (
	SchemeS3   = "s3"
	SchemeFile = "file"
	// SchemeAzure is Azure Blob Storage and ADLS Gen2 (and OneLake), whatever form the location was
	// given in (abfss://, abfs://, wasbs://, wasb://, az://); see azure_location.go.
	SchemeAzure = "abfss"
	// SchemeGCS is Google Cloud Storage.
	SchemeGCS = "gs"
)

// Location is a parsed table location or object URI.
//
// Everything here works on raw (percent-decoded) strings. Delta logs store paths as URL-encoded URIs
// ("s3://b/t/a%20b.parquet", "date%3D2024-01-01/x.parquet"); the delta package decodes them
// (url.PathUnescape) before calling URI, Relative or OpenURI, and storage keys are the decoded bytes.
type Location struct {
	Scheme string // SchemeS3, SchemeAzure, SchemeGCS or SchemeFile
	Bucket string // the S3 or GCS bucket, the Azure container (OneLake: the workspace)
	// Account is the Azure storage account's DFS host ("acct.dfs.core.windows.net",
	// "onelake.dfs.fabric.microsoft.com"); empty for an az:// location until the configured account
	// is filled in (Canonical, Open).
	Account string
	// Path is the key prefix under the bucket without leading or trailing '/' for object stores (may be empty),
	// and an absolute, cleaned path for files.
	Path string
}

// String renders the location the way Store.Location does: "s3://bucket/prefix", "file:///abs".
//
// Azure locations render as "abfss://container@account-host/prefix" once the account is known, and as
// "az://container/prefix" before; GCS ones as "gs://bucket/prefix".
func (l Location) String() string {
	var base string
	switch l.Scheme {
	case SchemeS3:
		base = "s3://" + l.Bucket
	case SchemeGCS:
		base = "gs://" + l.Bucket
	case SchemeAzure:
		base = "az://" + l.Bucket
		if l.Account != "" {
			base = "abfss://" + l.Bucket + "@" + l.Account
		}
	default:
		return "file://" + filepath.ToSlash(l.Path)
	}
	if l.Path == "" {
		return base
	}
	return base + "/" + l.Path
}

// Canonical returns the one form of a location that comparisons use (the fleet keys table locks by
// it): s3a:// and s3n:// become s3://, every Azure form becomes
// abfss://container@account.dfs.<suffix>/prefix (az:// takes the account from cfg), gs:// and
// file:/// stay, local paths become absolute file:/// URIs, and prefixes lose their surrounding '/'.
func Canonical(location string, cfg Config) (string, error) {
	loc, err := ParseLocation(location)
	if err != nil {
		return "", err
	}
	if loc, err = loc.resolve(cfg); err != nil {
		return "", err
	}
	return loc.String(), nil
}

// resolve fills in what the location leaves to the configuration: the account of an az:// location.
func (l Location) resolve(cfg Config) (Location, error) {
	if l.Scheme == SchemeAzure && l.Account == "" {
		if cfg.Azure.Account == "" {
			return l, fmt.Errorf("location %s names no storage account: set the Azure storage account "+
				"(AZURE_STORAGE_ACCOUNT) or write it as abfss://%s@<account>.dfs.core.windows.net/%s", l, l.Bucket, l.Path)
		}
		account, err := azureAccountHost(cfg.Azure.Account)
		if err != nil {
			return l, err
		}
		l.Account = account
	}
	return l, nil
}

// ParseLocation parses "s3://bucket/prefix" (s3a:// and s3n:// are the same thing to Spark), the Azure
// forms "abfss://container@account.dfs.core.windows.net/prefix" (also abfs://, wasbs:// and wasb:// with
// the blob host, OneLake's abfss://workspace@onelake.dfs.fabric.microsoft.com/item/…, and
// "az://container/prefix" with the account from the configuration), "gs://bucket/prefix",
// "file:///abs/path", "file:/abs/path" (Hadoop's form) or "file://localhost/abs/path", or a plain local
// path, which is made absolute.
func ParseLocation(s string) (Location, error) {
	if s == "" {
		return Location{}, errors.New("empty location: give s3://bucket/prefix, file:///path or a local path")
	}
	scheme, rest, hasScheme := splitScheme(s)
	if !hasScheme {
		abs, err := filepath.Abs(s)
		if err != nil {
			return Location{}, fmt.Errorf("location %q: %w", s, err)
		}
		return Location{Scheme: SchemeFile, Path: abs}, nil
	}
	switch strings.ToLower(scheme) {
	case "s3", "s3a", "s3n":
		bucket, path, _ := strings.Cut(strings.TrimPrefix(rest, "//"), "/")
		if !strings.HasPrefix(rest, "//") || bucket == "" {
			return Location{}, fmt.Errorf("location %q: want s3://bucket/prefix", s)
		}
		if strings.Contains(bucket, "@") {
			// Credentials in a URI would end up in statuses and logs; don't echo the location.
			return Location{}, errors.New("S3 location must not contain credentials (user@bucket): configure them separately")
		}
		return Location{Scheme: SchemeS3, Bucket: bucket, Path: strings.Trim(path, "/")}, nil
	case "abfss", "abfs", "wasbs", "wasb", "az", "azure":
		return parseAzureLocation(s, strings.ToLower(scheme), rest)
	case "gs":
		bucket, path, _ := strings.Cut(strings.TrimPrefix(rest, "//"), "/")
		if !strings.HasPrefix(rest, "//") || bucket == "" {
			return Location{}, fmt.Errorf("location %q: want gs://bucket/prefix", s)
		}
		if strings.ContainsAny(bucket, "@:") {
			return Location{}, errors.New("GCS location must not contain credentials (user@bucket): configure them separately")
		}
		return Location{Scheme: SchemeGCS, Bucket: bucket, Path: strings.Trim(path, "/")}, nil
	case "file":
		var path string
		switch {
		case strings.HasPrefix(rest, "///"):
			path = rest[2:]
		case strings.HasPrefix(rest, "//localhost/"):
			path = rest[len("//localhost"):]
		case strings.HasPrefix(rest, "//"):
			return Location{}, fmt.Errorf("location %q names a remote host: only local file:///paths are supported", s)
		case strings.HasPrefix(rest, "/"):
			path = rest
		default:
			return Location{}, fmt.Errorf("location %q: file URIs need an absolute path (file:///path)", s)
		}
		return Location{Scheme: SchemeFile, Path: filepath.Clean(filepath.FromSlash(path))}, nil
	}
	return Location{}, fmt.Errorf("location %q: unsupported scheme %q; deltakeeper reads s3://, abfss://, az://, gs:// and local paths", s, scheme)
}

// splitScheme splits "scheme:rest". Only "x://" and the schemes we know ("file:/x", and "s3:x" so that
// typo is reported rather than taken for a local directory) count, so a local path with a colon in it
// ("data:2024") is still a path.
func splitScheme(s string) (scheme, rest string, ok bool) {
	i := strings.IndexByte(s, ':')
	if i <= 0 {
		return "", "", false
	}
	scheme, rest = s[:i], s[i+1:]
	for j, c := range scheme {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (j == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return "", "", false
		}
	}
	switch strings.ToLower(scheme) {
	case SchemeFile, "s3", "s3a", "s3n":
		return scheme, rest, true
	}
	if strings.HasPrefix(rest, "//") {
		return scheme, rest, true
	}
	return "", "", false
}

// URI names key in s as an absolute URI ("s3://bucket/prefix/key"), e.g. for messages or for writing
// an absolute path into a Delta log (which must percent-encode it).
func URI(s Store, key string) string {
	return strings.TrimSuffix(s.Location(), "/") + "/" + key
}

// Relative returns the key that an absolute object URI has in s, if the URI lies under s's root:
// Relative(store at s3://b/t, "s3a://b/t/x/y.parquet") = "x/y.parquet", true. Scheme-less paths
// (relative Delta paths, which are already keys) and URIs elsewhere return false.
func Relative(s Store, uri string) (key string, ok bool) {
	if _, _, hasScheme := splitScheme(uri); !hasScheme {
		return "", false
	}
	root, err := ParseLocation(s.Location())
	if err != nil {
		return "", false
	}
	obj, err := ParseLocation(uri)
	if err != nil || obj.Scheme != root.Scheme || obj.Bucket != root.Bucket || obj.Account != root.Account {
		return "", false
	}
	base := root.Path
	if root.Scheme == SchemeFile {
		base = filepath.ToSlash(base)
		obj.Path = filepath.ToSlash(obj.Path)
	}
	switch {
	case base == "" || base == "/":
		key = strings.TrimPrefix(obj.Path, "/")
	case strings.HasPrefix(obj.Path, base+"/"):
		key = obj.Path[len(base)+1:]
	default:
		return "", false
	}
	if validateKey(key) != nil {
		return "", false
	}
	return key, true
}

// OpenURI opens the store holding an absolute object URI from a Delta log and returns the object's
// key in it: the store is rooted at the bucket (S3, GCS), the container (Azure) or at "/" (files), so callers can cache one store
// per Location() and reuse it for every file in that bucket. Prefer Relative with the table's own
// store first; OpenURI is for files outside the table (shallow clones, migrated tables).
func OpenURI(ctx context.Context, uri string, cfg Config) (Store, string, error) {
	if _, _, hasScheme := splitScheme(uri); !hasScheme {
		return nil, "", fmt.Errorf("%q is not an absolute URI: relative Delta paths are keys in the table's store", uri)
	}
	loc, err := ParseLocation(uri)
	if err != nil {
		return nil, "", err
	}
	key := strings.TrimPrefix(filepath.ToSlash(loc.Path), "/")
	if err := validateKey(key); err != nil {
		return nil, "", fmt.Errorf("URI %q: %w", uri, err)
	}
	root := Location{Scheme: loc.Scheme, Bucket: loc.Bucket, Account: loc.Account}
	if loc.Scheme == SchemeFile {
		root.Path = string(filepath.Separator)
	}
	st, err := openLocation(ctx, root, cfg)
	if err != nil {
		return nil, "", err
	}
	return st, key, nil
}
