// Package storage is the byte layer of the worker: it lists, reads and writes objects under a table's
// root on local disk, S3, Azure (Blob Storage, ADLS Gen2, OneLake) or Google Cloud Storage, and knows
// nothing about Delta. Every Delta commit relies on PutIfAbsent being
// atomic: exactly one of any number of concurrent writers of a key wins, and nobody ever overwrites.
//
// # Durability contract
//
// What each store promises when a call returns, and what a crash (a SIGKILL, an OOM kill, a node that
// loses power) can leave behind. Delta's correctness needs exactly this: a commit that was reported
// written survives, a reader never sees part of an object, and debris is never mistaken for data.
//
// Local disk (LocalStore; also NFS and other shared filesystems with atomic link and rename):
//
//   - Atomic: every object is written to a hidden temp file in its target's directory (TempName) and
//     then renamed (Put, Create's Close) or hard-linked (PutIfAbsent) into place. Readers and List see
//     no object or the whole object, never a prefix. link(2) refuses an existing name, so PutIfAbsent has
//     exactly one winner across threads, processes and hosts sharing the filesystem.
//   - Durable when the call returns nil: the temp file's data is fsynced before the rename or link, the
//     directory is fsynced after it, and before the first write into a directory the store fsyncs the
//     parent of every directory on the path from it up to the table root, and the root's parent
//     (directories it created and ones it found, which a crashed writer may have left unsynced). When
//     the directory fsync after a successful link fails, PutIfAbsent returns the error although the
//     object is visible: callers must read the key back before concluding that nothing was written
//     (delta's committer does).
//     Delete is not fsynced: after a power loss a deleted object may reappear, which only ever brings
//     back a file nothing references or a log file the log no longer needs (vacuum and log cleanup
//     delete it again). Filesystems that cannot fsync directories (EINVAL) keep atomicity only.
//   - A crash can leave: temp files, hidden from List and from every Delta reader (a temp file that
//     was already linked is a second name of the committed object; removing it changes nothing). They
//     are listed by Leftovers and removed by vacuum (data directories, after the deleted-file retention)
//     and log cleanup (_delta_log, after the log retention), by last modification time. Data files
//     completed but never committed are ordinary unreferenced files: vacuum's.
//
// S3 (S3Store; AWS and compatible servers with conditional writes):
//
//   - Atomic: PutObject and CompleteMultipartUpload replace an object as a whole, and PutIfAbsent is
//     PutObject with If-None-Match: *, which the server decides: one winner, no overwrite. Nothing is
//     written under a temporary name.
//   - Durable when the call returns nil: S3 acknowledges a write only once it is stored redundantly.
//     A request whose acknowledgement was lost may have landed; PutIfAbsent recognises its own object
//     on the retry (identical bytes), and callers that cannot tell (delta's CommitOutcomeUnknownError)
//     look the commit up before deciding.
//   - A crash can leave: an incomplete multipart upload of a Create that never reached Close. It is
//     invisible to readers and listings, but its parts are stored and billed until aborted. Leftovers
//     lists the uploads under the store's prefix; vacuum aborts those of data files deltakeeper names
//     (delta.IsDataFileName) and log cleanup those of classic checkpoints, once older than their
//     retention. A bucket lifecycle rule (AbortIncompleteMultipartUpload) is a good second line.
//
// Azure (AzureStore; Blob Storage and ADLS Gen2 accounts, OneLake, through the Blob API):
//
//   - Atomic: Put Blob and Put Block List replace a blob as a whole, and PutIfAbsent is Put Blob with
//     If-None-Match: *, which the service decides (409 BlobAlreadyExists for every writer but one).
//     Nothing is written under a temporary name. OneLake serves the Blob API too, but that it honours
//     If-None-Match on Put Blob has not been verified here (Azurite emulates Blob Storage only).
//   - Durable when the call returns nil: Azure acknowledges a write once it is stored redundantly
//     (LRS or better). Lost acknowledgements are recognised on the retry as on S3.
//   - A crash can leave: the staged, uncommitted blocks of a Create that never reached Close (also
//     of an aborted or failed one). They are invisible to reads and listings, are discarded by the
//     service a week after staging or when the name is written again, and no API can delete them
//     earlier, so Leftovers reports none.
//
// GCS (GCSStore):
//
//   - Atomic: an upload (single request, or a resumable session finalised by Close) replaces an
//     object as a whole, and PutIfAbsent uploads with ifGenerationMatch=0, which GCS decides (412 for
//     every writer but one). Nothing is written under a temporary name. Reads are pinned to the
//     generation seen at open.
//   - Durable when the call returns nil: GCS acknowledges an upload once it is stored redundantly.
//     Lost acknowledgements are recognised on the retry as on S3.
//   - A crash can leave: the resumable session of a Create that was not finalised. It holds no
//     object, cannot be listed, and GCS discards it a week after it began, so Leftovers reports none.
package storage
