package controllers

import (
	"errors"
	"fmt"
	"path"
	"strings"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// The physical identity of a table, which the lock and duplicate detection key on. The reconcilers may not
// import worker/storage (depguard: they never read tables), so this is the same normalisation as
// storage.Canonical, written again as a pure function over strings; test/envtest/location_key_test.go checks
// that both agree on every location form.

// CanonicalLocation returns the one form of a table location that storage.Canonical returns: s3a:// and
// s3n:// become s3://, every Azure form becomes abfss://container@account.dfs.<suffix>/prefix (az:// takes
// azureAccount), gs:// stays, file: URIs become file:///clean/path, and prefixes lose their surrounding '/'.
// Only the URI forms a DeltaTable accepts are handled (the CRD rejects plain paths).
func CanonicalLocation(location, azureAccount string) (string, error) {
	scheme, rest, ok := strings.Cut(location, ":")
	if !ok {
		return "", fmt.Errorf("location %q has no scheme: write s3://, abfss://, gs:// or file:///", location)
	}
	switch strings.ToLower(scheme) {
	case "s3", "s3a", "s3n":
		return bucketLocation("s3", location, rest)
	case "gs":
		return bucketLocation("gs", location, rest)
	case "abfss", "abfs", "wasbs", "wasb", "az", "azure":
		return azureLocation(strings.ToLower(scheme), location, rest, azureAccount)
	case "file":
		var p string
		switch {
		case strings.HasPrefix(rest, "///"):
			p = rest[2:]
		case strings.HasPrefix(rest, "//localhost/"):
			p = rest[len("//localhost"):]
		case strings.HasPrefix(rest, "/") && !strings.HasPrefix(rest, "//"):
			p = rest
		default:
			return "", fmt.Errorf("location %q: file URIs need an absolute local path (file:///path)", location)
		}
		return "file://" + path.Clean(p), nil
	}
	return "", fmt.Errorf("location %q: unsupported scheme %q", location, scheme)
}

func bucketLocation(scheme, location, rest string) (string, error) {
	if !strings.HasPrefix(rest, "//") {
		return "", fmt.Errorf("location %q: want %s://bucket/prefix", location, scheme)
	}
	bucket, prefix, _ := strings.Cut(rest[2:], "/")
	if bucket == "" || strings.Contains(bucket, "@") {
		return "", fmt.Errorf("location %q: want %s://bucket/prefix", location, scheme)
	}
	return joinLocation(scheme+"://"+bucket, prefix), nil
}

func azureLocation(scheme, location, rest, account string) (string, error) {
	if !strings.HasPrefix(rest, "//") {
		return "", fmt.Errorf("location %q: want abfss://container@account.dfs.core.windows.net/prefix", location)
	}
	authority, prefix, _ := strings.Cut(rest[2:], "/")
	container, host, hasHost := strings.Cut(authority, "@")
	if scheme != "az" && scheme != "azure" {
		if !hasHost {
			return "", fmt.Errorf("location %q: want %s://container@account.dfs.core.windows.net/prefix", location, scheme)
		}
		account = host
	} else if hasHost {
		return "", fmt.Errorf("location %q: az:// takes no account", location)
	}
	if container == "" {
		return "", fmt.Errorf("location %q names no container", location)
	}
	dfs, err := azureDFSHost(account)
	if err != nil {
		return "", fmt.Errorf("location %q: %w", location, err)
	}
	return joinLocation("abfss://"+container+"@"+dfs, prefix), nil
}

// azureDFSHost is the DFS host of an account given by name, DFS host or Blob host, lower-cased.
func azureDFSHost(account string) (string, error) {
	a := strings.ToLower(strings.TrimSuffix(account, "."))
	if a == "" || strings.ContainsAny(a, "/:@ ") {
		return "", errors.New("no valid Azure storage account: set storage.azure.account or write abfss://container@account.dfs.core.windows.net/prefix")
	}
	name, suffix, hasSuffix := strings.Cut(a, ".")
	if !hasSuffix {
		return name + ".dfs.core.windows.net", nil
	}
	service, domain, ok := strings.Cut(suffix, ".")
	if !ok || (service != "dfs" && service != "blob") || name == "" {
		return "", fmt.Errorf("the Azure storage host %q is neither a Blob nor a DFS endpoint", account)
	}
	return name + ".dfs." + domain, nil
}

func joinLocation(base, prefix string) string {
	if prefix = strings.Trim(prefix, "/"); prefix == "" {
		return base
	}
	return base + "/" + prefix
}

// tableIdentity is what makes two DeltaTables the same physical table: the canonical location, qualified by
// the store it lives in where one location string can name different stores: an S3-compatible endpoint
// (two MinIO servers both have a bucket "lake"), a GCS emulator, and for file:// locations the namespace and
// PersistentVolumeClaim (the same path on two claims is two tables).
func tableIdentity(t *deltav1.DeltaTable) (string, error) {
	account := ""
	if t.Spec.Storage != nil && t.Spec.Storage.Azure != nil {
		account = t.Spec.Storage.Azure.Account
	}
	canon, err := CanonicalLocation(t.Spec.Location, account)
	if err != nil {
		return "", err
	}
	var store string
	if s := t.Spec.Storage; s != nil {
		switch {
		case s.S3 != nil && s.S3.Endpoint != "":
			store = "endpoint=" + strings.TrimSuffix(strings.ToLower(s.S3.Endpoint), "/")
		case s.GCS != nil && s.GCS.EmulatorHost != "":
			store = "emulator=" + strings.ToLower(s.GCS.EmulatorHost)
		case s.Local != nil:
			store = "claim=" + t.Namespace + "/" + s.Local.ClaimName
		}
	}
	if store == "" {
		return canon, nil
	}
	return canon + " (" + store + ")", nil
}

// LocationLeaseName is the name of the lock Lease of a table identity (see tableIdentity): a hash, since
// locations are neither valid object names nor short enough.
func LocationLeaseName(identity string) string {
	return "deltakeeper-location-" + longHash(identity)
}

// TableLeaseName is the lock Lease name of a table, for tests and tools: LocationLeaseName of its identity.
func TableLeaseName(t *deltav1.DeltaTable) (string, error) {
	id, err := tableIdentity(t)
	if err != nil {
		return "", err
	}
	return LocationLeaseName(id), nil
}
