package cluster

// SetRewriteHook observes every rewrite's waves and spilled bytes; the returned function removes it.
func SetRewriteHook(f func(waves int, spilledBytes int64)) func() {
	rewriteHook = f
	return func() { rewriteHook = nil }
}
