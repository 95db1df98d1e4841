package storage

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
)

// azureStatus is the HTTP status of a failed call, or 0 when no response was received.
func azureStatus(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

// isAzureNotFound covers BlobNotFound and the body-less 404 of Get Blob Properties; a missing
// container is a configuration error, not a missing key.
func isAzureNotFound(err error) bool {
	if bloberror.HasCode(err, bloberror.ContainerNotFound) {
		return false
	}
	return bloberror.HasCode(err, bloberror.BlobNotFound) || azureStatus(err) == http.StatusNotFound
}

// isAzureConditionLost reports a conditional Put Blob that lost: 409 BlobAlreadyExists (what Azure
// answers to If-None-Match: * on an existing blob) or 412 ConditionNotMet.
func isAzureConditionLost(err error) bool {
	return bloberror.HasCode(err, bloberror.BlobAlreadyExists, bloberror.ConditionNotMet) ||
		azureStatus(err) == http.StatusPreconditionFailed
}

// azureError wraps a failed call with what to do about it, maps a missing blob to ErrNotFound, and
// strips credentials, in the same classes as s3Error.
func (s *AzureStore) azureError(op, key string, err error) error {
	uri := s.uri(key)
	status := azureStatus(err)
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		err = fmt.Errorf("%s %s: %w", op, uri, err)
	case bloberror.HasCode(err, bloberror.ContainerNotFound):
		err = fmt.Errorf("%s %s: container %q does not exist: check the table location: %w", op, uri, s.name, err)
	case isAzureNotFound(err):
		err = fmt.Errorf("%s %s: %w", op, uri, ErrNotFound)
	case status == http.StatusForbidden || status == http.StatusUnauthorized ||
		bloberror.HasCode(err, bloberror.AuthenticationFailed, bloberror.AuthorizationFailure,
			bloberror.AuthorizationPermissionMismatch, bloberror.InvalidAuthenticationInfo):
		err = fmt.Errorf("%s %s: access denied: check the Azure credentials (account key, SAS token with "+
			"read, write, delete and list permissions, or the workload identity's role assignment such as "+
			"Storage Blob Data Contributor): %w", op, uri, err)
	case status == http.StatusTooManyRequests || status >= 500 || bloberror.HasCode(err, bloberror.ServerBusy):
		err = fmt.Errorf("%s %s: the server is still throttling or failing after %d attempt(s): retry later "+
			"or raise the Azure max attempts: %w", op, uri, s.cfg.MaxAttempts, err)
	default:
		err = fmt.Errorf("%s %s: %w", op, uri, err)
	}
	return redact(err, s.cfg.secrets()...)
}
