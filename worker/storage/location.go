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
)

// Location is a parsed table location or object URI.
//
// Everything here works on raw (percent-decoded) strings. Delta logs store paths as URL-encoded URIs
// ("s3://b/t/a%20b.parquet", "date%3D2024-01-01/x.parquet"); the delta package decodes them
// (url.PathUnescape) before calling URI, Relative or OpenURI, and storage keys are the decoded bytes.
type Location struct {
	Scheme string // SchemeS3 or SchemeFile
	Bucket string // S3 only
	// Path is the key prefix under the bucket without leading or trailing '/' for S3 (may be empty),
	// and an absolute, cleaned path for files.
	Path string
}

// String renders the location the way Store.Location does: "s3://bucket/prefix", "file:///abs".
func (l Location) String() string {
	if l.Scheme == SchemeS3 {
		if l.Path == "" {
			return "s3://" + l.Bucket
		}
		return "s3://" + l.Bucket + "/" + l.Path
	}
	return "file://" + filepath.ToSlash(l.Path)
}

// ParseLocation parses "s3://bucket/prefix" (s3a:// and s3n:// are the same thing to Spark),
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
	return Location{}, fmt.Errorf("location %q: unsupported scheme %q; deltakeeper reads s3:// and local paths", s, scheme)
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
	if err != nil || obj.Scheme != root.Scheme || obj.Bucket != root.Bucket {
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
// key in it: the store is rooted at the bucket (S3) or at "/" (files), so callers can cache one store
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
	root := Location{Scheme: loc.Scheme, Bucket: loc.Bucket}
	if loc.Scheme == SchemeFile {
		root.Path = string(filepath.Separator)
	}
	st, err := openLocation(ctx, root, cfg)
	if err != nil {
		return nil, "", err
	}
	return st, key, nil
}
