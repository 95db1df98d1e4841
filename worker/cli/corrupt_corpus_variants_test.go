package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// corpusWant is what every command must do with a variant.
type corpusWant int

const (
	wantCorrupt     corpusWant = iota // exit 2, refused, CorruptTable, table unchanged
	wantUnsupported                   // exit 2, refused, UnsupportedFeature, table unchanged
	wantOK                            // a legitimate success (exit 0 or 3), and scan reads every row
)

// corpusVariant is one way a table can be broken. mutate breaks the healthy copy and returns the
// file (and the field, where there is one) the refusal must name.
type corpusVariant struct {
	name   string
	mutate func(c *corpusCase) (file, field string)
	want   corpusWant
	// because says why success is legitimate, for wantOK and for the commands excused below.
	because string
	// dataOnly: only commands that open data files can notice (the others legitimately succeed).
	dataOnly bool
	// writersOnly: reading is legitimate (inspect, scan, quality succeed); writers must refuse.
	writersOnly bool
	rows        int // rows scan reads when it succeeds, if not all corpusRows
	// per overrides the expectation for single commands (the reason is in because).
	per map[string]corpusWant
}

func (v corpusVariant) expect(c corpusCommand) corpusWant {
	if w, ok := v.per[c.name]; ok {
		return w
	}
	switch {
	case v.dataOnly && !c.readsData:
		return wantOK
	case v.writersOnly && (c.name == "inspect" || c.name == "scan" || c.name == "quality"):
		return wantOK
	}
	return v.want
}

// Commit variants.

func breakLastCommit(edit func([]byte) []byte) func(c *corpusCase) (string, string) {
	return func(c *corpusCase) (string, string) {
		name := commitName(c.latestV)
		c.write(c.logFile(name), edit(c.read(c.logFile(name))))
		return name, ""
	}
}

func breakCommit(v func(c *corpusCase) int, edit func([]byte) []byte) func(c *corpusCase) (string, string) {
	return func(c *corpusCase) (string, string) {
		name := commitName(v(c))
		c.write(c.logFile(name), edit(c.read(c.logFile(name))))
		return name, ""
	}
}

func half(b []byte) []byte     { return b[:len(b)/2] }
func empty([]byte) []byte      { return nil }
func garbage(b []byte) []byte  { return []byte("\x00\x01\x02 this is not JSON \xff\xfe\n") }
func dropTail(b []byte) []byte { return b[:len(b)-12] }
func blankLines([]byte) []byte { return []byte("\n\n   \n") }
func nulBytes(b []byte) []byte { return make([]byte, len(b)) }
func jsonArray([]byte) []byte  { return []byte("[1,2,3]\n") }
func flipMiddle(b []byte) []byte {
	out := append([]byte(nil), b...)
	for i := len(out) / 3; i < len(out)/3+64 && i < len(out); i++ {
		out[i] ^= 0x5a
	}
	return out
}

// Checkpoint and data-file variants.

func breakCheckpoint(edit func([]byte) []byte) func(c *corpusCase) (string, string) {
	return func(c *corpusCase) (string, string) {
		name := checkpointName(c.ckptV)
		c.write(c.logFile(name), edit(c.read(c.logFile(name))))
		return name, ""
	}
}

// removeCommitsUpTo deletes commits 0..v, so that nothing but the checkpoint stands for them.
func (c *corpusCase) removeCommitsUpTo(v int) {
	for i := 0; i <= v; i++ {
		must(c.t, os.Remove(c.logFile(commitName(i))))
	}
}

func breakCheckpointAlone(edit func([]byte) []byte) func(c *corpusCase) (string, string) {
	return func(c *corpusCase) (string, string) {
		file, _ := breakCheckpoint(edit)(c)
		c.removeCommitsUpTo(c.ckptV)
		return file, ""
	}
}

func breakLastDataFile(edit func([]byte) []byte) func(c *corpusCase) (string, string) {
	return func(c *corpusCase) (string, string) {
		_, path := c.lastAdd()
		full := filepath.Join(c.dir, filepath.FromSlash(path))
		c.write(full, edit(c.read(full)))
		return path, ""
	}
}

func badMagicTail(b []byte) []byte {
	out := append([]byte(nil), b...)
	copy(out[len(out)-4:], "PARX")
	return out
}

func badMagicHead(b []byte) []byte {
	out := append([]byte(nil), b...)
	copy(out, "XXXX")
	return out
}

// badFooterLength makes the footer length (the 4 bytes before the trailing magic) point beyond the file.
func badFooterLength(b []byte) []byte {
	out := append([]byte(nil), b...)
	copy(out[len(out)-8:len(out)-4], []byte{0xff, 0xff, 0xff, 0x7f})
	return out
}

// badFooterBytes garbles the Thrift footer itself.
func badFooterBytes(b []byte) []byte {
	out := append([]byte(nil), b...)
	n := int(out[len(out)-8]) | int(out[len(out)-7])<<8
	start := len(out) - 8 - n
	for i := start; i < start+n/2; i++ {
		out[i] = 0xff
	}
	return out
}

// Action variants.

func editLastAdd(edit func(c *corpusCase, line string) string) func(c *corpusCase) (string, string) {
	return func(c *corpusCase) (string, string) {
		c.editCommit(c.latestV, `{"add":`, func(l string) string { return edit(c, l) })
		return commitName(c.latestV), ""
	}
}

func withField(field string, f func(c *corpusCase) (string, string)) func(c *corpusCase) (string, string) {
	return func(c *corpusCase) (string, string) {
		file, _ := f(c)
		return file, field
	}
}

// addWithPath appends a commit adding a copy of the last add under another path, which the
// refusal must name.
func addWithPath(path string) func(c *corpusCase) (string, string) {
	return func(c *corpusCase) (string, string) {
		line, old := c.lastAdd()
		c.appendCommit(replaceOnce(c, line, `"path":"`+old+`"`, `"path":"`+path+`"`))
		if path == "" {
			return "", "empty file path"
		}
		return path, ""
	}
}

// withDV upgrades the protocol to deletion vectors and replaces the last file by itself with a
// deletion vector whose descriptor is dv.
func withDV(field, dv string) func(c *corpusCase) (string, string) {
	return func(c *corpusCase) (string, string) {
		line, path := c.lastAdd()
		dvAdd := replaceOnce(c, line, `"dataChange":true`, `"dataChange":true,"deletionVector":`+dv)
		c.appendCommit(
			`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors"]}}`,
			fmt.Sprintf(`{"remove":{"path":%q,"deletionTimestamp":1700000000000,"dataChange":true}}`, path),
			dvAdd)
		return path, field
	}
}

func withMetaData(edit func(c *corpusCase, md string) string, field string) func(c *corpusCase) (string, string) {
	return func(c *corpusCase) (string, string) {
		return c.appendCommit(edit(c, c.metaData())), field
	}
}

// withProtocol appends a commit changing the protocol; the refusal names the feature or field.
func withProtocol(field, protocol string) func(c *corpusCase) (string, string) {
	return func(c *corpusCase) (string, string) {
		name := c.appendCommit(protocol)
		if field == "minReaderVersion" {
			return name, field
		}
		return "", field
	}
}

func withStats(stats string) func(c *corpusCase) (string, string) {
	return withField("stats", editLastAdd(func(c *corpusCase, l string) string {
		i := strings.Index(l, `"stats":"`)
		if i < 0 {
			c.t.Fatalf("no stats in %s", l)
		}
		return l[:i] + `"stats":` + stats + "}}"
	}))
}

func lastCheckpointIs(content string) func(c *corpusCase) (string, string) {
	return func(c *corpusCase) (string, string) {
		c.write(c.logFile("_last_checkpoint"), []byte(content))
		return "", ""
	}
}

const fallback = "a checkpoint that does not read is skipped while the commits it covers are all there, as Spark does: replaying them gives the same snapshot"

func dataFileAsCheckpoint(c *corpusCase) (string, string) {
	_, path := c.lastAdd()
	name := checkpointName(c.ckptV)
	c.write(c.logFile(name), c.read(filepath.Join(c.dir, filepath.FromSlash(path))))
	return name, ""
}

const hint = "_last_checkpoint is only a hint: readers list the log and ignore a wrong or unreadable one (PROTOCOL.md §Last Checkpoint File)"

var corpusVariants = []corpusVariant{
	// Commits after the checkpoint: the latest snapshot needs them.
	{name: "last commit truncated in half", mutate: breakLastCommit(half)},
	{name: "last commit garbage", mutate: breakLastCommit(garbage)},
	{name: "last commit 0 bytes", mutate: breakLastCommit(empty)},
	{name: "last commit blank lines", mutate: breakLastCommit(blankLines)},
	{name: "last commit loses its tail", mutate: breakLastCommit(dropTail)},
	{name: "last commit NUL bytes", mutate: breakLastCommit(nulBytes)},
	{name: "last commit is a JSON array", mutate: breakLastCommit(jsonArray)},
	{name: "middle commit after the checkpoint garbage", mutate: breakCommit(func(c *corpusCase) int { return c.ckptV + 1 }, garbage)},
	{name: "gap after the checkpoint", mutate: func(c *corpusCase) (string, string) {
		must(c.t, os.Remove(c.logFile(commitName(c.ckptV+1))))
		return commitName(c.ckptV + 1), ""
	}},
	{name: "gap with no checkpoint", mutate: func(c *corpusCase) (string, string) {
		must(c.t, os.Remove(c.logFile(checkpointName(c.ckptV))))
		must(c.t, os.Remove(c.logFile("_last_checkpoint")))
		must(c.t, os.Remove(c.logFile(commitName(1))))
		return commitName(1), ""
	}},
	{name: "commit below the checkpoint garbage", mutate: breakCommit(func(*corpusCase) int { return 1 }, garbage), want: wantOK,
		because: "the checkpoint stands for every commit up to its version; none of them is read"},
	{name: "commits below the checkpoint removed", mutate: func(c *corpusCase) (string, string) {
		c.removeCommitsUpTo(c.ckptV - 1)
		return "", ""
	}, want: wantOK, because: "log cleanup removes exactly these; the checkpoint stands for them"},

	// Checkpoints.
	{name: "checkpoint truncated", mutate: breakCheckpoint(half), want: wantOK, because: fallback},
	{name: "checkpoint truncated, covered commits gone", mutate: breakCheckpointAlone(half)},
	{name: "checkpoint 0 bytes", mutate: breakCheckpoint(empty), want: wantOK, because: fallback},
	{name: "checkpoint 0 bytes, covered commits gone", mutate: breakCheckpointAlone(empty)},
	{name: "checkpoint trailing magic broken", mutate: breakCheckpoint(badMagicTail), want: wantOK, because: fallback},
	{name: "checkpoint trailing magic broken, covered commits gone", mutate: breakCheckpointAlone(badMagicTail)},
	{name: "checkpoint leading magic broken", mutate: breakCheckpoint(badMagicHead), want: wantOK, because: fallback},
	{name: "checkpoint leading magic broken, covered commits gone", mutate: breakCheckpointAlone(badMagicHead)},
	{name: "checkpoint footer length beyond the file", mutate: breakCheckpoint(badFooterLength), want: wantOK, because: fallback},
	{name: "checkpoint footer length beyond the file, covered commits gone", mutate: breakCheckpointAlone(badFooterLength)},
	{name: "checkpoint footer garbled", mutate: breakCheckpoint(badFooterBytes), want: wantOK, because: fallback},
	{name: "checkpoint footer garbled, covered commits gone", mutate: breakCheckpointAlone(badFooterBytes)},
	{name: "checkpoint garbage, covered commits gone", mutate: breakCheckpointAlone(garbage)},
	{name: "checkpoint has the wrong schema (a data file)", mutate: dataFileAsCheckpoint, want: wantOK, because: fallback},
	{name: "checkpoint has the wrong schema, covered commits gone", mutate: func(c *corpusCase) (string, string) {
		file, _ := dataFileAsCheckpoint(c)
		c.removeCommitsUpTo(c.ckptV)
		return file, ""
	}},
	{name: "multi-part checkpoint missing a part, commits present", mutate: func(c *corpusCase) (string, string) {
		c.multiPartMissingOne()
		return "", ""
	}, want: wantOK, because: "an incomplete multi-part checkpoint is not a checkpoint (PROTOCOL.md §Checkpoints); the commits it would cover are all there to replay"},
	{name: "multi-part checkpoint missing a part, commits gone", mutate: func(c *corpusCase) (string, string) {
		c.multiPartMissingOne()
		c.removeCommitsUpTo(c.ckptV)
		return "", ""
	}},

	// _last_checkpoint: a hint.
	{name: "_last_checkpoint garbage", mutate: lastCheckpointIs("\x00garbage{"), want: wantOK, because: hint},
	{name: "_last_checkpoint 0 bytes", mutate: lastCheckpointIs(""), want: wantOK, because: hint},
	{name: "_last_checkpoint truncated", mutate: lastCheckpointIs(`{"version":2,"si`), want: wantOK, because: hint},
	{name: "_last_checkpoint points to a missing version", mutate: lastCheckpointIs(`{"version":99,"size":4}`), want: wantOK, because: hint},
	{name: "_last_checkpoint points to a version without a checkpoint", mutate: lastCheckpointIs(`{"version":1,"size":4}`), want: wantOK, because: hint},
	{name: "_last_checkpoint claims parts that do not exist", mutate: lastCheckpointIs(`{"version":2,"size":4,"parts":3}`), want: wantOK, because: hint},

	// Protocol and features.
	{name: "unknown reader feature", want: wantUnsupported, mutate: withProtocol("teleportation",
		`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["teleportation"],"writerFeatures":["teleportation"]}}`)},
	{name: "unknown writer feature", want: wantUnsupported, writersOnly: true, mutate: withProtocol("teleportation",
		`{"protocol":{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":["teleportation"]}}`),
		because: "a writer feature binds writers only; readers read the table as it is (PROTOCOL.md §Table Features)"},
	{name: "reader version from the future", want: wantUnsupported, mutate: withProtocol("reader version 9",
		`{"protocol":{"minReaderVersion":9,"minWriterVersion":9}}`)},
	{name: "protocol with a string version", mutate: withProtocol("minReaderVersion",
		`{"protocol":{"minReaderVersion":"one","minWriterVersion":2}}`)},

	// Metadata.
	{name: "metaData without schemaString", mutate: withMetaData(func(c *corpusCase, md string) string {
		i := strings.Index(md, `"schemaString":`)
		j := strings.Index(md, `,"partitionColumns"`)
		return md[:i] + md[j+1:]
	}, "schemaString")},
	{name: "metaData with a garbage schemaString", mutate: withMetaData(func(c *corpusCase, md string) string {
		i := strings.Index(md, `"schemaString":`)
		j := strings.Index(md, `,"partitionColumns"`)
		return md[:i] + `"schemaString":"{\"type\":\"struct\",\"fields\":[{\"na"` + md[j:]
	}, "schemaString")},
	{name: "partition column missing from the schema", mutate: withMetaData(func(c *corpusCase, md string) string {
		return replaceOnce(c, md, `"partitionColumns":[]`, `"partitionColumns":["order_day"]`)
	}, "order_day")},

	// Data files (only commands that read them notice).
	{name: "data file truncated", mutate: breakLastDataFile(half), dataOnly: true, because: "the command reads only the log"},
	{name: "data file 0 bytes", mutate: breakLastDataFile(empty), dataOnly: true, because: "the command reads only the log"},
	{name: "data file trailing magic broken", mutate: breakLastDataFile(badMagicTail), dataOnly: true, because: "the command reads only the log"},
	{name: "data file leading magic broken", mutate: breakLastDataFile(badMagicHead), dataOnly: true, because: "the command reads only the log"},
	{name: "data file footer length beyond the file", mutate: breakLastDataFile(badFooterLength), dataOnly: true, because: "the command reads only the log"},
	{name: "data file footer garbled", mutate: breakLastDataFile(badFooterBytes), dataOnly: true, because: "the command reads only the log"},
	{name: "data file pages garbled", mutate: breakLastDataFile(flipMiddle), dataOnly: true, because: "the command reads only the log"},
	{name: "data file missing", mutate: func(c *corpusCase) (string, string) {
		_, path := c.lastAdd()
		must(c.t, os.Remove(filepath.Join(c.dir, filepath.FromSlash(path))))
		return path, ""
	}, dataOnly: true, because: "the command reads only the log"},

	// Add actions.
	{name: "negative size", mutate: func(c *corpusCase) (string, string) {
		_, path := c.lastAdd()
		editLastAdd(func(c *corpusCase, l string) string { return replaceOnce(c, l, `"size":`, `"size":-`) })(c)
		return path, "size"
	}},
	{name: "bogus huge size", mutate: editLastAdd(func(c *corpusCase, l string) string {
		return replaceOnce(c, l, `"size":`, `"size":999999999999`)
	}), want: wantOK, because: "size only plans the work; the files are read at their real length and rewritten from it"},
	{name: "path escaping the table", mutate: addWithPath("../escaped.parquet")},
	{name: "path escaping the table, URL-encoded", mutate: addWithPath("..%2Fescaped.parquet")},
	{name: "absolute path elsewhere", mutate: addWithPath("/etc/escaped.parquet"), want: wantUnsupported, per: elsewhere, because: elsewhereBecause},
	{name: "absolute file URI elsewhere", mutate: addWithPath("file:///etc/escaped.parquet"), want: wantUnsupported, per: elsewhere, because: elsewhereBecause},
	{name: "duplicate add in one commit", mutate: func(c *corpusCase) (string, string) {
		line, path := c.lastAdd()
		return c.appendCommit(line, line), path
	}},
	{name: "an add with an empty path", mutate: addWithPath("")},
	{name: "a path with a NUL byte", mutate: addWithPath("a%00b.parquet")},
	{name: "partition values on an unpartitioned table", mutate: editLastAdd(func(c *corpusCase, l string) string {
		return replaceOnce(c, l, `"partitionValues":{}`, `"partitionValues":{"region":"eu-west"}`)
	}), want: wantOK, because: "a value for a column that is not a partition column is never read: readers take partition values for partitionColumns only"},

	// Deletion vectors.
	{name: "deletion vector of an unknown storage type", mutate: withDV("deletionVector", `{"storageType":"q","pathOrInlineDv":"abc","offset":1,"sizeInBytes":10,"cardinality":1}`)},
	{name: "inline deletion vector not Z85", mutate: withDV("deletionVector", `{"storageType":"i","pathOrInlineDv":"~~~~~","sizeInBytes":4,"cardinality":1}`)},
	{name: "inline deletion vector with a garbage bitmap", mutate: withDV("deletion vector", `{"storageType":"i","pathOrInlineDv":"0000000000","sizeInBytes":8,"cardinality":1}`),
		dataOnly: true, because: dvReaders},
	{name: "deletion vector file missing", mutate: withDV("deletion vector", `{"storageType":"u","pathOrInlineDv":"ab^-aqEH.-t@S}K{vb[*k^","offset":1,"sizeInBytes":34,"cardinality":1}`),
		dataOnly: true, because: dvReaders},
	{name: "deletion vector with negative cardinality", mutate: withDV("deletionVector", `{"storageType":"u","pathOrInlineDv":"ab^-aqEH.-t@S}K{vb[*k^","offset":1,"sizeInBytes":34,"cardinality":-1}`)},

	// Stats.
	{name: "stats not JSON", mutate: withStats(`"{\"numRecords\":5,"`), want: wantOK, because: statsOptional},
	{name: "stats with a negative numRecords", mutate: withStats(`"{\"numRecords\":-5}"`), want: wantOK, because: statsOptional},
	{name: "stats numRecords of the wrong type", mutate: withStats(`"{\"numRecords\":\"five\"}"`), want: wantOK, because: statsOptional},
	{name: "stats numRecords disagrees with the file", mutate: func(c *corpusCase) (string, string) {
		withStats(`"{\"numRecords\":7}"`)(c)
		return "", "rows"
	}, dataOnly: true,
		per: map[string]corpusWant{"scan": wantOK}, because: "scan reads the rows the file holds; only a rewrite must check them against the log"},
}

const (
	statsOptional    = "statistics are optional (PROTOCOL.md §Per-file Statistics): stats that do not parse, or an impossible count, are treated as absent, so nothing is skipped and rows are counted from the Parquet footer"
	dvReaders        = "only commands that apply deletion vectors read the bitmap; the descriptor itself is valid"
	elsewhereBecause = "inspect and quality read only the log; the protocol lets a table reference absolute paths (shallow clones), and deltakeeper refuses only to rewrite or delete them"
)

// elsewhere: what each command does with a live file outside the table root.
// A scan must read it, and it does not exist.
var elsewhere = map[string]corpusWant{"inspect": wantOK, "quality": wantOK, "scan": wantCorrupt}

// multiPartMissingOne renames the checkpoint into part 1 of 2 and points _last_checkpoint at it.
func (c *corpusCase) multiPartMissingOne() {
	single := c.logFile(checkpointName(c.ckptV))
	part := c.logFile(fmt.Sprintf("%020d.checkpoint.%010d.%010d.parquet", c.ckptV, 1, 2))
	must(c.t, os.Rename(single, part))
	c.write(c.logFile("_last_checkpoint"), []byte(fmt.Sprintf(`{"version":%d,"size":4,"parts":2}`, c.ckptV)))
}
