// Package torture is the project's torture suite: it does to deltakeeper what a new user's worst day
// would, on local disk, on the S3 test server and on Azurite (Azure Blob Storage), and checks after
// every blow that no row was lost or duplicated and that the table is still a table.
//
//   - TestCrash runs the CLI as a child process (optimize, clustering, vacuum, checkpoint with log
//     cleanup, maintain; one entry of crashCommands each) and SIGKILLs it at random moments — a random
//     time into the run, or on S3 exactly at its k-th request, forwarded or not. After every kill the
//     table must read the same rows as before (the project's scan and an independent reader: the log
//     replayed from the harness's own copies of the commits, ids read with parquet-go), its versions
//     must be contiguous, no commit may have changed, and the next run must succeed. A final vacuum
//     (zero retention) and log cleanup must leave no orphan and no temp file behind.
//   - TestCrashKeyed does the same to the keyed writers (issue 13): `merge` with --app-id/--batch-id
//     (upsert with a delete marker, update, delete), `ingest --mode upsert` and `delete --where`, on
//     copy-on-write and deletion-vector tables. A cycle writes a few keyed batches and every run
//     applies them in order, as a stream that lost its process would. After every kill the table must
//     hold the rows before the cycle with a prefix of its batches applied (a model: each key its last
//     row, deleted keys absent; never a shorter prefix than seen before), one commit per batch with
//     the next batch id (a replayed batch commits nothing); a delete is all or nothing. The
//     independent reader applies the deletion vectors the log names, and the final sweep counts the
//     DV files of live files as live and any other as an orphan.
//   - TestConcurrency races independent appender processes (this test binary re-executed) against
//     looping maintenance processes (the CLI): every appended row exactly once, every version readable
//     by time travel and equal to what the log says it holds, no commit file ever overwritten.
//   - TestS3Faults runs each maintenance command through internal/testutil/s3fault (throttling, 5xx,
//     resets, delays, lost acknowledgements of log writes, 500 after the write happened): each run
//     succeeds with the table exact, or fails with a clear error and the table exact, and a clean run
//     then succeeds.
//
// On Azure the harness reads the table's blobs with the SDK's container client, not through the
// project's store; Azure sets Last-Modified itself, so the log cannot be aged there, and the final
// sweep checks instead that log cleanup deletes nothing of a young log. Kills are time-based only (the
// fault proxy speaks S3).
//
// On S3 every child process talks to the server through the fault proxy, even when nothing is
// injected: that is what lets a kill land on an exact request, and what tells the harness when a
// dead client's requests have settled. Request-numbered kills replay exactly (given the same
// request order); time-based ones replay approximately.
//
// The size of the suite comes from DELTAKEEPER_TORTURE: "ci" (the default, what `make test` runs)
// or "full" (`make torture`). Every random choice derives from one seed, printed at the start and
// in every failure; DELTAKEEPER_TORTURE_SEED replays it (each subtest derives its own seed from it
// and its name, so `-run` narrows a replay to the failing subtest). A failing subtest keeps its
// table in a directory it names.
package torture
