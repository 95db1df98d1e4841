package storage

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/smithy-go"
)

// httpStatus is the HTTP status of a failed S3 call, or 0 when no response was received.
func httpStatus(err error) int {
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// apiCode is the S3 error code ("NoSuchKey", "SlowDown"), or "" when the response had none.
func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// isNotFound covers GetObject's NoSuchKey and HeadObject's body-less 404.
func isNotFound(err error) bool {
	switch apiCode(err) {
	case "NoSuchKey", "NotFound":
		return true
	case "NoSuchBucket":
		return false
	}
	return httpStatus(err) == http.StatusNotFound
}

// isConditionLost reports a conditional write that lost: 412 PreconditionFailed when the key exists,
// or 409 ConditionalRequestConflict, which AWS returns while a concurrent conditional write to the
// same key is in flight (that writer may still fail, but reporting "exists" is the safe answer: the
// Delta committer re-reads the log and retries).
func isConditionLost(err error) bool {
	switch apiCode(err) {
	case "PreconditionFailed", "ConditionalRequestConflict":
		return true
	}
	s := httpStatus(err)
	return s == http.StatusPreconditionFailed || s == http.StatusConflict
}

// s3Error wraps a failed call with what to do about it and without credentials.
func (s *S3Store) s3Error(op, key string, err error) error {
	uri := s.uri(key)
	status, code := httpStatus(err), apiCode(err)
	var unknownCA x509.UnknownAuthorityError
	var verify *tls.CertificateVerificationError
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		err = fmt.Errorf("%s %s: %w", op, uri, err)
	case code == "NoSuchBucket":
		err = fmt.Errorf("%s %s: bucket %q does not exist: check the table location: %w", op, uri, s.bucket, err)
	case status == http.StatusForbidden || code == "AccessDenied" || code == "InvalidAccessKeyId" ||
		code == "SignatureDoesNotMatch" || code == "ExpiredToken" || code == "InvalidToken":
		// Without s3:ListBucket, AWS also answers 403 (not 404) for keys that do not exist.
		err = fmt.Errorf("%s %s: access denied: check the S3 credentials (access key and secret, session "+
			"token, or the pod's IAM role) and the bucket policy, which must allow s3:ListBucket as well as "+
			"object access: %w", op, uri, err)
	case status == http.StatusTooManyRequests || status >= 500 || code == "SlowDown":
		err = fmt.Errorf("%s %s: the server is still throttling or failing after %d attempt(s): retry later "+
			"or raise the S3 max attempts: %w", op, uri, s.cfg.MaxAttempts, err)
	case errors.As(err, &unknownCA) || errors.As(err, &verify):
		err = fmt.Errorf("%s %s: the server's TLS certificate is not trusted: set the S3 CA bundle "+
			"(AWS_CA_BUNDLE) to the CA that signed it: %w", op, uri, err)
	default:
		err = fmt.Errorf("%s %s: %w", op, uri, err)
	}
	return redact(err, s.cfg.AccessKeyID, s.cfg.SecretAccessKey, s.cfg.SessionToken)
}

// redact hides any of secrets that an error's text contains. The SDK does not print credentials, but
// servers echo request details in error messages and callers put errors into Kubernetes statuses and
// logs, so the guarantee is enforced here rather than assumed.
func redact(err error, secrets ...string) error {
	msg := err.Error()
	changed := false
	for _, sec := range secrets {
		if len(sec) >= 3 && strings.Contains(msg, sec) {
			msg = strings.ReplaceAll(msg, sec, "[REDACTED]")
			changed = true
		}
	}
	if !changed {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

// redactedError keeps errors.Is/As working on the original chain while printing the cleaned text.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
