package delta

import (
	"errors"
	"fmt"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// Operation is what deltakeeper is about to do to a table; the features gate answers per
// operation, because e.g. compaction may copy rows of a table with CHECK constraints while an
// ingest into it may not.
type Operation int

// Operations known to the gate.
const (
	OpRead           Operation = iota + 1 // scan data files (applying DVs, column mapping)
	OpRewrite                             // compaction / clustering: dataChange=false rewrite of existing rows
	OpAppend                              // ingest: blind append of new rows
	OpMerge                               // MERGE / upsert / delete: rows change or disappear
	OpVacuum                              // delete unreferenced data files
	OpMetadataChange                      // table properties, protocol upgrades, domain metadata
	OpCheckpoint                          // write a checkpoint and _last_checkpoint
	OpLogCleanup                          // delete expired log files
)

func (o Operation) String() string {
	switch o {
	case OpRead:
		return "read"
	case OpRewrite:
		return "rewrite (compact/cluster)"
	case OpAppend:
		return "append"
	case OpMerge:
		return "merge"
	case OpVacuum:
		return "vacuum"
	case OpMetadataChange:
		return "change metadata of"
	case OpCheckpoint:
		return "checkpoint"
	case OpLogCleanup:
		return "clean up the log of"
	}
	return fmt.Sprintf("operation(%d)", int(o))
}

func (o Operation) writes() bool { return o != OpRead }

// ErrUnsupportedTable is matched (errors.Is) by every refusal of the gate.
var ErrUnsupportedTable = errors.New("table protocol not supported by deltakeeper")

// UnsupportedError is the gate's refusal: which table, which feature (or protocol version), why,
// and what the operator can do about it.
type UnsupportedError struct {
	Table     string
	Operation Operation
	Feature   string // "" when the protocol version itself is the problem
	Reason    string
	Hint      string
}

func (e *UnsupportedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "table %s", e.Table)
	if e.Feature != "" {
		fmt.Fprintf(&b, " uses table feature %q", e.Feature)
	}
	fmt.Fprintf(&b, ": %s; refusing to %s it", e.Reason, e.Operation)
	if e.Hint != "" {
		b.WriteString(" (" + e.Hint + ")")
	}
	return b.String()
}

func (e *UnsupportedError) Unwrap() error { return ErrUnsupportedTable }

// gateInput is what feature rules look at: the operation and the active table state.
type gateInput struct {
	op     Operation
	props  TableProperties
	schema *types.StructType
}

// featureRule returns "" when the operation is allowed, otherwise the reason and a hint.
type featureRule func(in gateInput) (reason, hint string)

func allow(gateInput) (string, string) { return "", "" }

func refuseAll(reason, hint string) featureRule {
	return func(gateInput) (string, string) { return reason, hint }
}

// refuseOps refuses the listed operations and allows the others.
func refuseOps(reason, hint string, ops ...Operation) featureRule {
	return func(in gateInput) (string, string) {
		for _, op := range ops {
			if in.op == op {
				return reason, hint
			}
		}
		return "", ""
	}
}

// whenNewRows refuses appends and merges while cond holds: the feature constrains new rows,
// which deltakeeper cannot evaluate (SQL expressions), but rewrites only copy existing rows.
func whenNewRows(cond func(gateInput) bool, reason, hint string) featureRule {
	return func(in gateInput) (string, string) {
		if (in.op == OpAppend || in.op == OpMerge) && cond(in) {
			return reason, hint
		}
		return "", ""
	}
}

var dataWrites = []Operation{OpRewrite, OpAppend, OpMerge}

// featureRules is THE decision table (the features of PROTOCOL.md §Table Features, with the writer rules
// of Spark's TableFeature.scala). A feature missing here is unknown, and unknown features are refused for
// every operation that needs them.
var featureRules = map[string]featureRule{
	FeatureAppendOnly: func(in gateInput) (string, string) {
		if in.op == OpMerge && in.props.flag(PropAppendOnly) {
			return "delta.appendOnly=true forbids updating or deleting rows", "insert-only ingest and compaction are allowed"
		}
		return "", ""
	},
	FeatureInvariants: whenNewRows(func(in gateInput) bool { return schemaHasMetadata(in.schema, "delta.invariants") },
		"column invariants must be checked on new rows and deltakeeper cannot evaluate SQL expressions", "compaction and vacuum are allowed"),
	FeatureCheckConstraints: whenNewRows(func(in gateInput) bool { return hasPropertyPrefix(in.props, "delta.constraints.") },
		"CHECK constraints must be checked on new rows and deltakeeper cannot evaluate SQL expressions", "compaction and vacuum are allowed"),
	FeatureGeneratedColumns: whenNewRows(func(in gateInput) bool { return schemaHasMetadata(in.schema, "delta.generationExpression") },
		"generated columns must be computed for new rows and deltakeeper cannot evaluate SQL expressions", "compaction and vacuum are allowed"),
	FeatureAllowColumnDefaults: whenNewRows(func(in gateInput) bool { return schemaHasMetadata(in.schema, "CURRENT_DEFAULT") },
		"column defaults must be applied to new rows and deltakeeper cannot evaluate SQL expressions", "compaction and vacuum are allowed"),
	FeatureIdentityColumns: whenNewRows(func(in gateInput) bool { return schemaHasMetadata(in.schema, "delta.identity.start") },
		"identity columns need values and a high-water mark maintained for new rows, which deltakeeper does not implement", "compaction and vacuum are allowed"),
	FeatureChangeDataFeed: func(in gateInput) (string, string) {
		if in.op == OpMerge && in.props.flag(PropEnableCDF) {
			return "the change data feed is enabled and deltakeeper does not write cdc files for updated or deleted rows", "disable delta.enableChangeDataFeed or run MERGE with Spark"
		}
		return "", ""
	},
	FeatureColumnMapping: func(in gateInput) (string, string) {
		if _, err := in.props.ColumnMappingMode(); err != nil {
			return err.Error(), ""
		}
		return "", ""
	},
	FeatureDeletionVectors: allow,
	FeatureRowTracking: func(in gateInput) (string, string) {
		if !in.props.flag(PropEnableRowTracking) {
			return "", "" // supported only: new files get fresh row ids, which the transaction assigns
		}
		switch in.op {
		case OpMerge, OpRewrite:
			// DML keeps the ids of the rows it copies (and of updated rows) the way a rewrite does:
			// in the materialized columns.
			if in.props[PropMaterializedRowIDColumn] == "" || in.props[PropMaterializedRowCommitVer] == "" {
				return "row tracking is enabled but the table names no materialized row id / row commit version columns, so rewritten rows cannot keep their row ids",
					"set " + PropMaterializedRowIDColumn + " and " + PropMaterializedRowCommitVer + " (Spark does when enabling row tracking)"
			}
		}
		return "", ""
	},
	FeatureTimestampNTZ:   allow,
	FeatureDomainMetadata: allow,
	FeatureClustering:     allow,
	// The preview is understood well enough to read the clustering columns and to add clustered files
	// (provider "liquid") without touching the definition; changing the definition is the preview
	// runtime's business.
	FeatureLiquidPreview: refuseOps("it is Databricks' preview of liquid clustering, whose definition deltakeeper does not rewrite",
		"optimize, vacuum and checkpoints work; change the clustering columns with Databricks, or upgrade the table to the clustering feature",
		OpMetadataChange),
	FeatureV2Checkpoint:         allow,
	FeatureVacuumProtocolCheck:  allow, // Vacuum always checks the full writer protocol here
	FeatureInCommitTimestamp:    allow,
	FeatureICTPreview:           allow,
	FeatureCheckpointProtection: allow, // metadata cleanup honours requireCheckpointProtectionBeforeVersion
	// Type widening: scans upcast old narrow files to the table type and rewrites write the current
	// type; deltakeeper never changes the schema, so delta.typeChanges stays as it is.
	FeatureTypeWidening:        allow,
	FeatureTypeWideningPreview: allow,
	FeatureVariantType: refuseOps("variant columns cannot be rewritten yet (no variant passthrough in the Parquet writer)",
		"vacuum and checkpoints are allowed", dataWrites...),
	FeatureVariantTypePreview: refuseOps("variant columns cannot be rewritten yet (no variant passthrough in the Parquet writer)",
		"vacuum and checkpoints are allowed", dataWrites...),
	FeatureVariantShredding: refuseOps("shredded variant columns cannot be read or written by deltakeeper",
		"vacuum and checkpoints are allowed", append([]Operation{OpRead}, dataWrites...)...),
	FeatureVariantShreddingPrev: refuseOps("shredded variant columns cannot be read or written by deltakeeper",
		"vacuum and checkpoints are allowed", append([]Operation{OpRead}, dataWrites...)...),
	FeatureIcebergCompatV1: refuseOps("Iceberg compatibility (UniForm) needs materialized partition columns, field ids and Iceberg metadata that deltakeeper does not write",
		"vacuum is allowed; compact with Spark or disable UniForm", dataWrites...),
	FeatureIcebergCompatV2: refuseOps("Iceberg compatibility (UniForm) needs materialized partition columns, field ids and Iceberg metadata that deltakeeper does not write",
		"vacuum is allowed; compact with Spark or disable UniForm", dataWrites...),
	FeatureIcebergCompatV3: refuseOps("Iceberg compatibility (UniForm) needs materialized partition columns, field ids and Iceberg metadata that deltakeeper does not write",
		"vacuum is allowed; compact with Spark or disable UniForm", dataWrites...),
	FeatureMaterializePartCols: refuseOps("partition columns must be written into data files, which deltakeeper's writer does not do yet",
		"vacuum is allowed", dataWrites...),
	FeatureCatalogManaged: refuseAll("the table is catalog-managed: its commits are ratified by a catalog and filesystem access is not allowed",
		"maintain it through its catalog"),
	FeatureCatalogOwnedPreview: refuseAll("the table is catalog-owned: its commits are ratified by a catalog and filesystem access is not allowed",
		"maintain it through its catalog"),
	FeatureCoordinatedCommits: refuseAll("the table uses coordinated commits, so commits are not plain files in _delta_log",
		"maintain it through its commit coordinator"),
	FeatureRedirectReaderWriter: refuseAll("the table redirects readers and writers to another location", ""),
	FeatureRedirectWriterOnly:   refuseAll("the table redirects writers to another location", ""),
	FeatureGeospatial:           refuseAll("geospatial types are not supported by deltakeeper", ""),
}

// CheckProtocol is the single place deciding whether deltakeeper may perform op on a table with
// this protocol and metadata. It returns an *UnsupportedError (errors.Is ErrUnsupportedTable).
func CheckProtocol(table string, p *Protocol, md *Metadata, schema *types.StructType, op Operation) error {
	refuse := func(feature, reason, hint string) error {
		return &UnsupportedError{Table: table, Operation: op, Feature: feature, Reason: reason, Hint: hint}
	}
	if p == nil || md == nil {
		return refuse("", "the log has no protocol or metadata", "")
	}
	if p.MinReaderVersion < 1 || p.MinReaderVersion > maxReaderVersion {
		return refuse("", fmt.Sprintf("reader version %d is not one deltakeeper understands (1-%d)", p.MinReaderVersion, maxReaderVersion),
			"upgrade deltakeeper")
	}
	if op.writes() && (p.MinWriterVersion < 1 || p.MinWriterVersion > maxWriterVersion) {
		return refuse("", fmt.Sprintf("writer version %d is not one deltakeeper understands (1-%d)", p.MinWriterVersion, maxWriterVersion),
			"upgrade deltakeeper")
	}
	if p.MinReaderVersion == 3 && p.MinWriterVersion < 7 {
		return refuse("", fmt.Sprintf("reader version 3 requires writer version 7, the log has %d", p.MinWriterVersion), "the protocol action is invalid")
	}
	in := gateInput{op: op, props: TableProperties(md.Configuration), schema: schema}
	features := p.ReaderFeatureSet()
	if p.HasWriterFeature(FeatureCoordinatedCommits) {
		// A writer feature, but without the coordinator the newest commits are not in
		// _delta_log yet, so even reading the files would see a stale table.
		features = append(features, FeatureCoordinatedCommits)
	}
	if op.writes() {
		// A writer must implement every writer and every reader feature (PROTOCOL.md §Table Features).
		features = p.WriterFeatureSet()
	}
	for _, f := range features {
		rule, known := featureRules[f]
		if !known {
			return refuse(f, "deltakeeper does not know this feature", "upgrade deltakeeper, or ask for the feature to be supported")
		}
		if reason, hint := rule(in); reason != "" {
			return refuse(f, reason, hint)
		}
	}
	return nil
}

func hasPropertyPrefix(p TableProperties, prefix string) bool {
	for k := range p {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// schemaHasMetadata reports whether any field, at any depth, carries the metadata key.
func schemaHasMetadata(t types.DataType, key string) bool {
	switch t := t.(type) {
	case *types.StructType:
		if t == nil {
			return false
		}
		for _, f := range t.Fields {
			if _, ok := f.Metadata[key]; ok {
				return true
			}
			if schemaHasMetadata(f.Type, key) {
				return true
			}
		}
	case *types.ArrayType:
		return schemaHasMetadata(t.ElementType, key)
	case *types.MapType:
		return schemaHasMetadata(t.KeyType, key) || schemaHasMetadata(t.ValueType, key)
	}
	return false
}
