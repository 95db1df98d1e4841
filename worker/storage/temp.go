package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"iter"
	"path"
	"regexp"
	"strings"
	"time"
)

// Interrupted writes leave debris that no Delta reader ever sees and that nothing but deltakeeper can
// attribute to deltakeeper. This file is the one place that says what that debris looks like:
//
//   - On local disk, every write goes through a hidden temp file next to its target (see local_write.go),
//     named TempName(target): ".<target name>.deltakeeper-tmp-<16 hex digits>". A writer killed before
//     its rename or link leaves that file behind: ".part-00003-….c000.zstd.parquet.deltakeeper-tmp-…" in
//     a data directory, "_delta_log/.00000000000000000007.json.deltakeeper-tmp-…" for a commit,
//     "_delta_log/.00000000000000000010.checkpoint.parquet.deltakeeper-tmp-…" for a checkpoint.
//     Versions before this naming used os.CreateTemp's ".<name>.tmp-<1 to 10 digits>", which is still
//     recognised so that the files they leaked get cleaned up too.
//   - On S3 nothing is ever written under a temporary name; a writer killed in the middle of Create's
//     multipart upload leaves an incomplete upload for the target key instead, which costs storage until
//     it is aborted. Uploads carry no mark of their writer: which targets are deltakeeper's is for the
//     caller to say (vacuum: data files named the way deltakeeper names them).
//
// Nothing else is ever recognised: another writer's temp files (Hadoop's ".name.crc", Spark's
// "_delta_log/.<v>.json.<uuid>.tmp", delta-rs' "_delta_log/_commit_<uuid>.json.tmp") are not ours.
// Vacuum removes data-directory leftovers and log cleanup those under _delta_log, once their last
// modification is older than the respective retention (Leftovers, RemoveLeftover).

// tempMarker separates the target name from the random suffix of a temp file.
const tempMarker = ".deltakeeper-tmp-"

var (
	tempNameRE       = regexp.MustCompile(`^\.(.+)\.deltakeeper-tmp-[0-9a-f]{16}$`)
	legacyTempNameRE = regexp.MustCompile(`^\.(.+)\.tmp-[0-9]{1,10}$`)
)

// TempName returns a fresh name for the temp file of a write of the file named target (a base name,
// no directory): hidden, in the same directory (so that the final rename or link is atomic), and
// unambiguously deltakeeper's.
func TempName(target string) string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "." + target + tempMarker + hex.EncodeToString(b[:])
}

// TempTarget reports whether the base name is one of deltakeeper's temp files (current or legacy
// naming) and returns the name of the file its write was creating.
func TempTarget(name string) (target string, ok bool) {
	if m := tempNameRE.FindStringSubmatch(name); m != nil {
		return m[1], true
	}
	if m := legacyTempNameRE.FindStringSubmatch(name); m != nil {
		return m[1], true
	}
	return "", false
}

func isTempName(name string) bool {
	_, ok := TempTarget(name)
	return ok
}

// Leftover is what an interrupted write of deltakeeper left behind: a temp file on local disk, or an
// incomplete multipart upload on S3.
type Leftover struct {
	// Key is the temp file's key ("dir/.name.deltakeeper-tmp-…"), or for an upload the key it was
	// uploading to.
	Key string
	// Target is the key the write was creating.
	Target string
	// Size is the bytes the leftover occupies (an upload's parts).
	Size int64
	// LastActivity is the temp file's modification time, or the upload's initiation: a write still in
	// progress keeps moving a temp file's time, so an old one was abandoned.
	LastActivity time.Time
	// UploadID identifies an incomplete multipart upload; empty for temp files.
	UploadID string
}

// LeftoverStore is implemented by stores whose interrupted writes can leave debris behind.
type LeftoverStore interface {
	// Leftovers yields the leftovers whose Key starts with prefix, in key order.
	Leftovers(ctx context.Context, prefix string) iter.Seq2[Leftover, error]
	// RemoveLeftover deletes a temp file or aborts an upload; one already gone is not an error.
	RemoveLeftover(ctx context.Context, l Leftover) error
}

// Leftovers lists the leftovers of store under prefix; a store that cannot have any yields nothing.
func Leftovers(ctx context.Context, store Store, prefix string) iter.Seq2[Leftover, error] {
	if ls, ok := store.(LeftoverStore); ok {
		return ls.Leftovers(ctx, prefix)
	}
	return func(func(Leftover, error) bool) {}
}

// RemoveLeftover removes one leftover found by Leftovers.
func RemoveLeftover(ctx context.Context, store Store, l Leftover) error {
	if ls, ok := store.(LeftoverStore); ok {
		return ls.RemoveLeftover(ctx, l)
	}
	return nil
}

// tempLeftover describes a temp file found by a listing.
func tempLeftover(info ObjectInfo) (Leftover, bool) {
	dir, name := path.Split(info.Key)
	target, ok := TempTarget(name)
	if !ok {
		return Leftover{}, false
	}
	return Leftover{Key: info.Key, Target: dir + target, Size: info.Size, LastActivity: info.ModTime}, true
}

// isTempKey reports whether a key's base name is a temp file name.
func isTempKey(key string) bool {
	return isTempName(key[strings.LastIndexByte(key, '/')+1:])
}
