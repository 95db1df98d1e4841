package delta

import (
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// ObjectKey turns a path from the log (add/remove/cdc path, sidecar path, 'p' DV path) into a
// storage key relative to the table root. Log paths are RFC 2396 URIs: relative ones are resolved
// against the table root after percent-decoding ("a%3Db/x%20y.parquet" → "a=b/x y.parquet", and
// a literal '%' in a directory name arrives as %25), absolute ones must lie under the table.
func ObjectKey(tableLocation, logPath string) (string, error) {
	if logPath == "" {
		return "", fmt.Errorf("empty file path in the log")
	}
	if isAbsoluteURI(logPath) {
		return absoluteToKey(tableLocation, logPath)
	}
	if strings.HasPrefix(logPath, "/") {
		// A rooted path is absolute on the table's file system, as Hadoop's Path reads it
		// (Spark resolves "/x/y.parquet" to s3://bucket/x/y.parquet, not to a file under the table).
		t, err := url.Parse(strings.TrimSuffix(tableLocation, "/"))
		if err != nil {
			return "", fmt.Errorf("table location %q is not a valid URI: %w", tableLocation, err)
		}
		return absoluteToKey(tableLocation, t.Scheme+"://"+t.Host+logPath)
	}
	decoded, err := url.PathUnescape(logPath)
	if err != nil {
		return "", fmt.Errorf("file path %q is not a valid URI path: %w", logPath, err)
	}
	return cleanKey(decoded, logPath)
}

func cleanKey(decoded, original string) (string, error) {
	if strings.IndexByte(decoded, 0) >= 0 {
		return "", fmt.Errorf("file path %q holds a NUL byte, which no file name can: %w", original, storage.ErrInvalidKey)
	}
	key := strings.TrimPrefix(decoded, "/")
	if key == "" || key == "." || strings.HasPrefix(path.Clean(key), "../") || path.Clean(key) == ".." {
		return "", fmt.Errorf("file path %q escapes the table root", original)
	}
	return key, nil
}

// isAbsoluteURI reports whether p starts with a URI scheme ("s3://", "file:/", "abfss://").
func isAbsoluteURI(p string) bool {
	i := strings.IndexByte(p, ':')
	if i <= 0 || strings.IndexByte(p[:i], '/') >= 0 {
		return false
	}
	for j := 0; j < i; j++ {
		c := p[j]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || j > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return true
}

func absoluteToKey(tableLocation, logPath string) (string, error) {
	u, err := url.Parse(logPath)
	if err != nil {
		return "", fmt.Errorf("file path %q is not a valid URI: %w", logPath, err)
	}
	t, err := url.Parse(strings.TrimSuffix(tableLocation, "/"))
	if err != nil {
		return "", fmt.Errorf("table location %q is not a valid URI: %w", tableLocation, err)
	}
	if schemeFamily(u.Scheme) != schemeFamily(t.Scheme) || u.Host != t.Host {
		return "", fmt.Errorf("file %q lies outside the table %s; deltakeeper only handles files under the table root", logPath, tableLocation)
	}
	root := strings.TrimSuffix(t.Path, "/") + "/"
	rel, ok := strings.CutPrefix(u.Path, root)
	if !ok {
		return "", fmt.Errorf("file %q lies outside the table %s; deltakeeper only handles files under the table root", logPath, tableLocation)
	}
	return cleanKey(rel, logPath)
}

// schemeFamily treats the Hadoop S3 connector schemes as one.
func schemeFamily(s string) string {
	switch s = strings.ToLower(s); s {
	case "s3a", "s3n":
		return "s3"
	}
	return s
}

// EncodePath turns a storage key of a new file into the relative URI written to the log. It
// percent-encodes everything outside RFC 3986's unreserved and sub-delimiter characters, '/'
// and '@', so that ':' can never be mistaken for a scheme and '%' round-trips as %25.
func EncodePath(key string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(key))
	for i := 0; i < len(key); i++ {
		c := key[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			strings.IndexByte("-._~/!$&'()*+,;=@", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0xF])
	}
	return b.String()
}
