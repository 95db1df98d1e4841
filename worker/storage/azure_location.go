package storage

import (
	"errors"
	"fmt"
	"strings"
)

// Azure names one storage (a container of a storage account) in several ways: Spark and Databricks
// write abfss://container@account.dfs.core.windows.net/path (ADLS Gen2's DFS endpoint) or, in older
// tables, wasbs://container@account.blob.core.windows.net/path (the Blob endpoint of the same account);
// delta-rs and object_store also take az://container/path with the account configured separately.
// OneLake (Microsoft Fabric) is one account for everybody, onelake.dfs.fabric.microsoft.com, whose
// "containers" are workspaces. All of them are parsed into Location{Scheme: SchemeAzure, Bucket:
// container, Account: DFS host} and render as abfss://, the form Azure users copy from the portal.

// parseAzureLocation parses the part of an Azure location after "scheme:".
func parseAzureLocation(s, scheme, rest string) (Location, error) {
	authority, path, _ := strings.Cut(strings.TrimPrefix(rest, "//"), "/")
	if !strings.HasPrefix(rest, "//") || authority == "" {
		return Location{}, fmt.Errorf("location %q: want abfss://container@account.dfs.core.windows.net/prefix or az://container/prefix", s)
	}
	loc := Location{Scheme: SchemeAzure, Path: strings.Trim(path, "/")}
	container, host, hasHost := strings.Cut(authority, "@")
	switch {
	case scheme == "az" || scheme == "azure":
		if hasHost {
			return Location{}, fmt.Errorf("location %q: az:// takes no account (az://container/prefix); "+
				"write abfss://container@account.dfs.core.windows.net/prefix to name one", s)
		}
	case !hasHost:
		return Location{}, fmt.Errorf("location %q: want %s://container@account.dfs.core.windows.net/prefix", s, scheme)
	default:
		account, err := azureAccountHost(host)
		if err != nil {
			return Location{}, fmt.Errorf("location %q: %w", s, err)
		}
		loc.Account = account
	}
	if err := validateContainer(container); err != nil {
		// The user-info part of a URI is where credentials would go; don't echo the location.
		return Location{}, err
	}
	loc.Bucket = container
	return loc, nil
}

// validateContainer checks an Azure container name (lower-case letters, digits and hyphens) or a
// OneLake workspace name or GUID (also upper-case letters, '_' and '.'; a workspace whose name has
// spaces is addressed by its GUID). Anything with ':' or '@' looks like credentials and is refused
// without echoing it.
func validateContainer(name string) error {
	if strings.ContainsAny(name, ":@") {
		return errors.New("the Azure location must not contain credentials (user:key@): configure them separately")
	}
	if name == "" || len(name) > 256 {
		return fmt.Errorf("the Azure container name %q is invalid: give 3-63 letters, digits or hyphens", name)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("the Azure container name %q is invalid: give 3-63 letters, digits or hyphens", name)
		}
	}
	return nil
}

// azureAccountHost returns the DFS host of an account given as a bare account name ("acct"), its
// DFS host, or its Blob host ("acct.blob.core.windows.net", also sovereign clouds'
// "acct.blob.core.chinacloudapi.cn"), lower-cased.
func azureAccountHost(account string) (string, error) {
	a := strings.ToLower(strings.TrimSuffix(account, "."))
	if a == "" || strings.ContainsAny(a, "/:@ ") {
		return "", fmt.Errorf("the Azure storage account %q is invalid: give the account name or its host "+
			"(account.dfs.core.windows.net)", account)
	}
	name, suffix, hasSuffix := strings.Cut(a, ".")
	if !hasSuffix {
		return name + ".dfs.core.windows.net", nil
	}
	service, domain, ok := strings.Cut(suffix, ".")
	if !ok || (service != "dfs" && service != "blob") || name == "" {
		return "", fmt.Errorf("the Azure storage host %q is neither a Blob nor a DFS endpoint "+
			"(account.dfs.core.windows.net, onelake.dfs.fabric.microsoft.com)", account)
	}
	return name + ".dfs." + domain, nil
}

// azureAccountName is the account name of a DFS host: its first label.
func azureAccountName(host string) string {
	name, _, _ := strings.Cut(host, ".")
	return name
}

// azureBlobServiceURL is the Blob endpoint of an account given by its DFS host: the store speaks the
// Blob API, which ADLS Gen2 and OneLake accounts serve too.
func azureBlobServiceURL(host string) string {
	name, suffix, _ := strings.Cut(host, ".")
	return "https://" + name + "." + strings.Replace(suffix, "dfs.", "blob.", 1) + "/"
}

// isOneLake reports whether the host is Microsoft Fabric's OneLake, which accepts only Entra ID
// tokens (no account keys or SAS).
func isOneLake(host string) bool {
	return strings.HasPrefix(host, "onelake.")
}
