package result

// Share reports one share of a scale-out run (optimize or maintain with --share): the work this share
// did and, for the share that commits (index 0), the run's one commit. Old readers ignore the field.
type Share struct {
	Run     string `json:"run"`
	Index   int    `json:"index"`
	Count   int    `json:"count"`
	Version int64  `json:"atVersion"` // the snapshot every share planned from
	// This share's work: units (compaction bins, a clustering range) rewritten, their input and output
	// files, bytes and rows written. Reused: an earlier attempt of this share had finished; its
	// manifest was kept and this attempt's duplicate outputs deleted.
	Units        int   `json:"units"`
	Inputs       int   `json:"inputs"`
	Outputs      int   `json:"outputs"`
	BytesWritten int64 `json:"bytesWritten"`
	Rows         int64 `json:"rows"`
	Reused       bool  `json:"reused,omitempty"`
	// The commit (the committing share only): the shares whose units all committed, those with a unit
	// dropped because a concurrent commit removed one of its inputs, and those that wrote no manifest in
	// time (failed or still running); their work is left for the next run.
	Committed []int `json:"committed,omitempty"`
	Dropped   []int `json:"dropped,omitempty"`
	Missing   []int `json:"missing,omitempty"`
	// UnitsCommitted and UnitsDropped count units across the run.
	UnitsCommitted int `json:"unitsCommitted,omitempty"`
	UnitsDropped   int `json:"unitsDropped,omitempty"`
	// Superseded names (the first few of SupersededFiles) the outputs that were not committed: deleted at
	// once when the commit certainly did not reference them, else left for VACUUM.
	Superseded      []string `json:"superseded,omitempty"`
	SupersededFiles int      `json:"supersededFiles,omitempty"`
	// AlreadyCommitted: the table already holds this run's commit (a repeated commit step); nothing
	// was done.
	AlreadyCommitted bool `json:"alreadyCommitted,omitempty"`
	// The run's vacuum (with --vacuum), spread over the shares by key ranges of the table: this share's
	// part, and in index 0's result the sums over the shares listed in Vacuumed (those that reported in
	// time). VacuumSkipped says why this share did not vacuum (the run neither committed nor settled).
	Vacuumed           []int  `json:"vacuumed,omitempty"`
	VacuumFilesDeleted int64  `json:"vacuumFilesDeleted,omitempty"`
	VacuumBytesDeleted int64  `json:"vacuumBytesDeleted,omitempty"`
	VacuumDirectories  int64  `json:"vacuumDirectories,omitempty"`
	VacuumSkipped      string `json:"vacuumSkipped,omitempty"`
}

// MaxSupersededNamed bounds the paths Share.Superseded lists, for the termination message's size.
const MaxSupersededNamed = 5
