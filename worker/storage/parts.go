package storage

import (
	"fmt"
	"strings"
)

// bufferParts appends p to *buf and calls send each time the buffer holds size bytes (send empties
// it). It returns how many bytes of p were taken, which is all of them unless send failed. The S3
// (multipart) and Azure (block) writers cut their uploads this way.
func bufferParts(buf *[]byte, size int, p []byte, send func() error) (int, error) {
	written := 0
	for len(p) > 0 {
		take := min(size-len(*buf), len(p))
		*buf = append(*buf, p[:take]...)
		p = p[take:]
		written += take
		if len(*buf) == size {
			if err := send(); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

// storePrefix normalises a store's key prefix: "" or a valid key ending in '/'. location renders
// the store's location for the error message.
func storePrefix(prefix string, location func(prefix string) string) (string, error) {
	prefix = strings.Trim(prefix, "/")
	if prefix == "" {
		return "", nil
	}
	if err := validateKey(prefix); err != nil {
		return "", fmt.Errorf("prefix of %s: %w", location(prefix), err)
	}
	return prefix + "/", nil
}
