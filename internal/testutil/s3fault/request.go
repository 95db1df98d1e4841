package s3fault

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// Op is what an S3 request does, derived from its method, path and query the way S3 routes it.
type Op string

// The operations the project's stores issue.
const (
	OpGet            Op = "get"             // GetObject (also ranged)
	OpHead           Op = "head"            // HeadObject, HeadBucket
	OpPut            Op = "put"             // PutObject (conditional or not)
	OpCopy           Op = "copy"            // CopyObject
	OpDelete         Op = "delete"          // DeleteObject
	OpDeleteObjects  Op = "delete-objects"  // DeleteObjects (POST ?delete)
	OpList           Op = "list"            // ListObjects(V2), ListMultipartUploads
	OpCreateUpload   Op = "create-upload"   // CreateMultipartUpload
	OpUploadPart     Op = "upload-part"     // UploadPart
	OpCompleteUpload Op = "complete-upload" // CompleteMultipartUpload
	OpAbortUpload    Op = "abort-upload"    // AbortMultipartUpload
	OpOther          Op = "other"
)

// Request is what a rule sees of one request.
type Request struct {
	// N numbers the requests in arrival order, from 1, over the proxy's life.
	N      int64
	Method string
	Op     Op
	// Bucket and Key come from the path-style URL (/bucket/key), percent-decoded; Key is "" for
	// bucket-level requests (listings).
	Bucket, Key string
	Query       url.Values
	Header      http.Header
}

// Conditional reports a create-only write (PutObject with If-None-Match: *), the commit point of
// every Delta commit on S3.
func (r Request) Conditional() bool { return r.Header.Get("If-None-Match") != "" }

// newRequest classifies r as S3 routes it (path-style addressing, which the test server and the
// project's test configurations use).
func newRequest(n int64, r *http.Request) Request {
	path := r.URL.Path
	if raw := r.URL.RawPath; raw != "" {
		if p, err := url.PathUnescape(raw); err == nil {
			path = p
		}
	}
	bucket, key, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	q := r.URL.Query()
	req := Request{N: n, Method: r.Method, Bucket: bucket, Key: key, Query: q, Header: r.Header}
	_, uploads := q["uploads"]
	_, uploadID := q["uploadId"]
	_, del := q["delete"]
	switch {
	case r.Method == http.MethodHead:
		req.Op = OpHead
	case r.Method == http.MethodGet && key == "":
		req.Op = OpList
	case r.Method == http.MethodGet && uploadID:
		req.Op = OpList // ListParts
	case r.Method == http.MethodGet:
		req.Op = OpGet
	case r.Method == http.MethodPut && uploadID:
		req.Op = OpUploadPart
	case r.Method == http.MethodPut && r.Header.Get("X-Amz-Copy-Source") != "":
		req.Op = OpCopy
	case r.Method == http.MethodPut:
		req.Op = OpPut
	case r.Method == http.MethodPost && del:
		req.Op = OpDeleteObjects
	case r.Method == http.MethodPost && uploads:
		req.Op = OpCreateUpload
	case r.Method == http.MethodPost && uploadID:
		req.Op = OpCompleteUpload
	case r.Method == http.MethodDelete && uploadID:
		req.Op = OpAbortUpload
	case r.Method == http.MethodDelete:
		req.Op = OpDelete
	default:
		req.Op = OpOther
	}
	return req
}

// Matcher selects requests for a rule.
type Matcher func(Request) bool

// Ops matches requests doing one of ops.
func Ops(ops ...Op) Matcher {
	return func(r Request) bool {
		for _, op := range ops {
			if r.Op == op {
				return true
			}
		}
		return false
	}
}

// Writes matches every request that changes the bucket: puts, copies, deletes and multipart steps.
func Writes() Matcher {
	return Ops(OpPut, OpCopy, OpDelete, OpDeleteObjects, OpCreateUpload, OpUploadPart, OpCompleteUpload, OpAbortUpload)
}

// KeyContains matches object requests whose key contains s ("/_delta_log/").
func KeyContains(s string) Matcher {
	return func(r Request) bool { return r.Key != "" && strings.Contains(r.Key, s) }
}

// LogPuts matches PutObject requests into a Delta log: commits, checkpoints, _last_checkpoint.
func LogPuts() Matcher {
	return func(r Request) bool { return r.Op == OpPut && strings.Contains("/"+r.Key, "/_delta_log/") }
}

// commitRE matches a commit file's key: <table>/_delta_log/<20 digits>.json.
var commitRE = regexp.MustCompile(`(^|/)_delta_log/\d{20}\.json$`)

// CommitPuts matches the PutObject requests of Delta commits (_delta_log/<version>.json).
func CommitPuts() Matcher {
	return func(r Request) bool { return r.Op == OpPut && commitRE.MatchString(r.Key) }
}

// All matches requests every matcher matches.
func All(ms ...Matcher) Matcher {
	return func(r Request) bool {
		for _, m := range ms {
			if m != nil && !m(r) {
				return false
			}
		}
		return true
	}
}
