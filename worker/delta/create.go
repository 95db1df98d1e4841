package delta

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/google/uuid"

	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// ErrTableExists is returned by Create when version 0 already exists.
var ErrTableExists = errors.New("delta table already exists")

// CreateOptions describe a new table.
type CreateOptions struct {
	Schema           *types.StructType
	PartitionColumns []string
	Configuration    map[string]string
	// Protocol overrides the protocol derived from the configuration (minimal versions, plus
	// the features that enabled properties need).
	Protocol    *Protocol
	Name        string
	Description string
}

// Create commits version 0 (commitInfo, protocol, metaData) with PutIfAbsent, for ingest into a
// new table and for tests. It fails with ErrTableExists if the table already has a commit 0.
func (t *Table) Create(ctx context.Context, opts CreateOptions) (*Snapshot, error) {
	if opts.Schema == nil || len(opts.Schema.Fields) == 0 {
		return nil, fmt.Errorf("table %s: create needs a schema with at least one column", t.Location())
	}
	for _, c := range opts.PartitionColumns {
		if opts.Schema.Field(c) == nil {
			return nil, fmt.Errorf("table %s: partition column %q is not in the schema", t.Location(), c)
		}
	}
	schemaString, err := opts.Schema.SchemaString()
	if err != nil {
		return nil, err
	}
	now := t.clock.Now()
	md := Metadata{
		ID: uuid.NewString(), Name: opts.Name, Description: opts.Description,
		Format: Format{Provider: "parquet", Options: map[string]string{}}, SchemaString: schemaString,
		PartitionColumns: append([]string{}, opts.PartitionColumns...), Configuration: maps.Clone(opts.Configuration),
		CreatedTime: ptr(now.UnixMilli()),
	}
	if md.Configuration == nil {
		md.Configuration = map[string]string{}
	}
	if TableProperties(md.Configuration).flag(PropEnableRowTracking) {
		// Spark names the materialized row-tracking columns when row tracking is enabled; without
		// them no rewrite could ever preserve row ids.
		if md.Configuration[PropMaterializedRowIDColumn] == "" {
			md.Configuration[PropMaterializedRowIDColumn] = "_row-id-col-" + uuid.NewString()
		}
		if md.Configuration[PropMaterializedRowCommitVer] == "" {
			md.Configuration[PropMaterializedRowCommitVer] = "_row-commit-version-col-" + uuid.NewString()
		}
	}
	p := minimalProtocol(TableProperties(md.Configuration))
	if opts.Protocol != nil {
		p = *opts.Protocol
	}
	props := TableProperties(md.Configuration)
	mode, err := props.ColumnMappingMode()
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t.Location(), err)
	}
	if err := validateColumnMapping(opts.Schema, mode, ""); err != nil {
		return nil, fmt.Errorf("table %s: %w", t.Location(), err)
	}
	if err := CheckProtocol(t.Location(), &p, &md, opts.Schema, OpMetadataChange); err != nil {
		return nil, err
	}
	// An empty pre-table snapshot lets the one commit path serialize version 0.
	empty := &Snapshot{table: t, version: NoVersion, protocol: p, metadata: md, schema: opts.Schema, props: props, mode: mode,
		txns: map[string]SetTransaction{}, domains: map[string]DomainMetadata{}, segment: &logSegment{cpVersion: NoVersion}}
	tx := &Transaction{table: t, snap: empty, kind: OpMetadataChange, opts: TxnOptions{Operation: "CREATE TABLE",
		OperationParameters: map[string]string{"partitionBy": jsonString(md.PartitionColumns), "description": opts.Description, "isManaged": "false", "properties": jsonString(md.Configuration)}},
		txnID: uuid.NewString(), isolation: props.IsolationLevel(), newMetadata: &md, newProtocol: &p,
		readFiles: map[string]bool{}, readAppIDs: map[string]bool{}, readDomains: map[string]bool{}, removedPaths: map[string]bool{},
		txns: map[string]*SetTransaction{}, domains: map[string]*DomainMetadata{}, metrics: map[string]string{}, tags: map[string]string{}}
	data, err := tx.serialize(commitState{version: 0, hwm: -1}, nil)
	if err != nil {
		return nil, err
	}
	if err := t.store.PutIfAbsent(ctx, CommitKey(0), data); err != nil {
		if errors.Is(err, storage.ErrAlreadyExists) {
			return nil, fmt.Errorf("table %s: %w", t.Location(), ErrTableExists)
		}
		return nil, fmt.Errorf("table %s: write commit 0: %w", t.Location(), err)
	}
	return t.At(ctx, 0)
}

// minimalProtocol returns the lowest protocol that supports the enabled properties.
func minimalProtocol(props TableProperties) Protocol {
	p := Protocol{MinReaderVersion: 1, MinWriterVersion: 2}
	var features []string
	if m, _ := props.ColumnMappingMode(); m != ColumnMappingNone {
		p = Protocol{MinReaderVersion: 2, MinWriterVersion: 5}
	}
	if props.InCommitTimestampsEnabled() {
		features = append(features, FeatureInCommitTimestamp)
	}
	if props.flag(PropEnableDeletionVectors) {
		features = append(features, FeatureDeletionVectors)
	}
	if props.flag(PropEnableRowTracking) {
		features = append(features, FeatureRowTracking, FeatureDomainMetadata)
	}
	if props.flag(PropEnableCDF) && p.MinWriterVersion < 4 {
		p.MinWriterVersion = 4
	}
	if len(features) > 0 {
		p = p.WithFeatures(features...)
	}
	return p
}

func jsonString(v any) string {
	b, _ := jsonMarshal(v)
	return string(b)
}
