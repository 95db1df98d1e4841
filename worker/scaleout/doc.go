// Package scaleout spreads one maintenance run (compaction or clustering, and its vacuum) over several processes and
// still makes one commit:
//
//   - every share plans the same work from the same pinned snapshot version V (the plan is a pure function
//     of V and the options) and takes its part of it (Balance: bins or clustering ranges by a stable order,
//     balanced by bytes), so share i of N is always the same work, whichever attempt runs it;
//   - a share writes its new data files, then a Manifest (the inputs it consumed, the files it added with
//     their statistics, the rows) to the run directory _deltakeeper/runs/<run>/share-<i>.json, with
//     put-if-absent. Delta readers and VACUUM ignore directories starting with "_"; the data files are
//     ordinary unreferenced files until the commit, which VACUUM removes if the run never commits them;
//   - one process (the share of index 0, after its own share) waits for every manifest and commits them in
//     one OPTIMIZE transaction on the latest snapshot (Commit): a unit (a compaction bin, a clustering
//     share) whose inputs are all still live is committed, the others are dropped with their outputs deleted
//     and named in the result — the single-pod compaction's per-bin rule. The commit carries a txn action
//     (appId ScaleOutAppID, version V) so that a repeated commit step, after a crash at any point, finds
//     the run committed instead of committing it twice or deleting files the log references;
//   - with vacuum, every share then vacuums its part of the table (worker/vacuum's Share), but only once
//     the run is settled — committed, or marked settled by index 0 (vacuum.go) — so that a short retention
//     never deletes outputs the commit is about to reference; index 0 sums the shares' vacuum reports.
//
// The package reads and writes tables through worker/delta and worker/storage only; worker/optimize and
// worker/cluster build the units, worker/cli wires the commands.
package scaleout
