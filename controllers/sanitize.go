package controllers

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Worker messages and Kubernetes errors end up in conditions, events and logs that many people can read.
// They should never carry credentials: user:password in URLs, presigned-URL signatures and tokens, AWS access
// keys. The worker does not print credentials, but a storage error may echo a URL, so everything the manager
// copies out of a pod passes through sanitize.
var redactions = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]+@`), "${1}***@"},
	{regexp.MustCompile(`(?i)(X-Amz-(?:Signature|Credential|Security-Token))=[^&\s"']+`), "${1}=***"},
	{regexp.MustCompile(`(?i)((?:aws_)?(?:secret_access_key|session_token|access_key_id|password|token|secret)["']?\s*[:=]\s*["']?)[^\s"',;&]+`), "${1}***"},
	{regexp.MustCompile(`\b(?:AKIA|ASIA)[A-Z0-9]{16}\b`), "***"},
}

// sanitize removes credentials from s, collapses whitespace and cuts it to at most max bytes on a rune
// boundary.
func sanitize(s string, max int) string {
	for _, r := range redactions {
		s = r.re.ReplaceAllString(s, r.repl)
	}
	s = strings.Join(strings.Fields(s), " ")
	return truncate(s, max)
}

// truncate cuts s to at most max bytes, ending in "…" when cut.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const ellipsis = "…"
	cut := max - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// lastLines returns up to n trailing non-empty lines of s: the end of a log holds the error.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
