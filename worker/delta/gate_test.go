package delta

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/types"

	"github.com/deltakeeper/deltakeeper/internal/testutil"
)

func TestCheckProtocol_DecidesPerOperation(t *testing.T) {
	plain := &types.StructType{Fields: []*types.StructField{{Name: "a", Type: prim("integer"), Nullable: true}}}
	withInvariant := &types.StructType{Fields: []*types.StructField{{Name: "a", Type: prim("integer"), Nullable: true,
		Metadata: map[string]json.RawMessage{"delta.invariants": json.RawMessage(`"{\"expression\":{\"expression\":\"a > 0\"}}"`)}}}}
	writer7 := func(features ...string) Protocol {
		return Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: features}
	}
	rw := func(features ...string) Protocol {
		return Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: features, WriterFeatures: features}
	}
	all := []Operation{OpRead, OpRewrite, OpAppend, OpMerge, OpVacuum, OpMetadataChange, OpCheckpoint, OpLogCleanup}
	cases := []struct {
		name    string
		p       Protocol
		props   map[string]string
		schema  *types.StructType
		refused []Operation // every other operation is allowed
		feature string
	}{
		{"legacy 1/2 without invariants", Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, nil, plain, nil, ""},
		{"invariants in use", Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, nil, withInvariant, []Operation{OpAppend, OpMerge}, FeatureInvariants},
		{"check constraints in use", Protocol{MinReaderVersion: 1, MinWriterVersion: 3}, map[string]string{"delta.constraints.pos": "a > 0"}, plain, []Operation{OpAppend, OpMerge}, FeatureCheckConstraints},
		{"CDF enabled", Protocol{MinReaderVersion: 1, MinWriterVersion: 4}, map[string]string{PropEnableCDF: "true"}, plain, []Operation{OpMerge}, FeatureChangeDataFeed},
		{"appendOnly", writer7(FeatureAppendOnly), map[string]string{PropAppendOnly: "true"}, plain, []Operation{OpMerge}, FeatureAppendOnly},
		{"deletion vectors, v2 checkpoints, ICT, domains, clustering", rw(FeatureDeletionVectors, FeatureV2Checkpoint, FeatureTimestampNTZ),
			nil, plain, nil, ""},
		{"writer features of clustering", writer7(FeatureClustering, FeatureDomainMetadata, FeatureInCommitTimestamp, FeatureVacuumProtocolCheck), nil, plain, nil, ""},
		{"unknown writer feature", writer7("fancyNewThing"), nil, plain, all[1:], "fancyNewThing"},
		{"unknown reader feature", rw("fancyNewThing"), nil, plain, all, "fancyNewThing"},
		{"catalog managed", rw(FeatureCatalogManaged), nil, plain, all, FeatureCatalogManaged},
		{"coordinated commits", writer7(FeatureCoordinatedCommits), nil, plain, all, FeatureCoordinatedCommits},
		{"iceberg compat", writer7(FeatureColumnMapping, FeatureIcebergCompatV2), map[string]string{PropColumnMappingMode: "name"}, plain, []Operation{OpRewrite, OpAppend, OpMerge}, FeatureIcebergCompatV2},
		{"variant", rw(FeatureVariantType), nil, plain, []Operation{OpRewrite, OpAppend, OpMerge}, FeatureVariantType},
		{"shredded variant", rw(FeatureVariantShredding), nil, plain, []Operation{OpRead, OpRewrite, OpAppend, OpMerge}, FeatureVariantShredding},
		{"row tracking enabled", writer7(FeatureRowTracking, FeatureDomainMetadata), map[string]string{PropEnableRowTracking: "true"}, plain, []Operation{OpRewrite, OpMerge}, FeatureRowTracking},
		{"row tracking enabled with materialized columns", writer7(FeatureRowTracking, FeatureDomainMetadata),
			map[string]string{PropEnableRowTracking: "true", PropMaterializedRowIDColumn: "_r", PropMaterializedRowCommitVer: "_c"}, plain, nil, ""},
		{"reader version 4", Protocol{MinReaderVersion: 4, MinWriterVersion: 7}, nil, plain, all, ""},
		{"writer version 8", Protocol{MinReaderVersion: 1, MinWriterVersion: 8}, nil, plain, all[1:], ""},
	}
	for _, c := range cases {
		md := &Metadata{ID: "x", Configuration: c.props}
		for _, op := range all {
			err := CheckProtocol("s3://b/t", &c.p, md, c.schema, op)
			refused := false
			for _, r := range c.refused {
				refused = refused || r == op
			}
			if refused != (err != nil) {
				t.Errorf("%s / %s: err = %v, want refused=%v", c.name, op, err, refused)
				continue
			}
			if err == nil {
				continue
			}
			var ue *UnsupportedError
			if !errors.Is(err, ErrUnsupportedTable) || !errors.As(err, &ue) || ue.Feature != c.feature || ue.Operation != op {
				t.Errorf("%s / %s: err = %#v, want feature %q", c.name, op, err, c.feature)
			}
			if !strings.Contains(err.Error(), "s3://b/t") || c.feature != "" && !strings.Contains(err.Error(), c.feature) {
				t.Errorf("%s / %s: message %q names neither table nor feature", c.name, op, err)
			}
		}
	}
}

func TestProtocol_LegacyVersionsImplyFeaturesAndUpgradeKeepsThem(t *testing.T) {
	p := Protocol{MinReaderVersion: 2, MinWriterVersion: 5}
	want := []string{FeatureAppendOnly, FeatureChangeDataFeed, FeatureCheckConstraints, FeatureColumnMapping, FeatureGeneratedColumns, FeatureInvariants}
	if got := p.WriterFeatureSet(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("writer 5 features %v", got)
	}
	up := p.WithFeatures(FeatureClustering, FeatureDomainMetadata)
	if up.MinWriterVersion != 7 || up.MinReaderVersion != 2 || !up.HasWriterFeature(FeatureColumnMapping) || !up.HasWriterFeature(FeatureClustering) {
		t.Fatalf("upgrade %+v", up)
	}
	dv := Protocol{MinReaderVersion: 1, MinWriterVersion: 2}.WithFeatures(FeatureDeletionVectors)
	if dv.MinReaderVersion != 3 || !dv.HasReaderFeature(FeatureDeletionVectors) || !dv.HasWriterFeature(FeatureInvariants) {
		t.Fatalf("DV upgrade %+v", dv)
	}
	b, _ := json.Marshal(Protocol{MinReaderVersion: 3, MinWriterVersion: 7})
	if string(b) != `{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":[],"writerFeatures":[]}` {
		t.Fatalf("protocol JSON %s", b)
	}
	b, _ = json.Marshal(Protocol{MinReaderVersion: 1, MinWriterVersion: 2, WriterFeatures: []string{"x"}})
	if string(b) != `{"minReaderVersion":1,"minWriterVersion":2}` {
		t.Fatalf("legacy protocol JSON %s", b)
	}
}

func TestUpgradeProtocol_OnlyThroughAnExplicitMetadataTransaction(t *testing.T) {
	tbl, snap := testTable(t).Create()
	if tx, _ := snap.Begin(OpAppend, TxnOptions{Operation: "WRITE"}); tx.UpgradeProtocol(FeatureClustering) == nil {
		t.Fatal("an append upgraded the protocol")
	}
	mustCommit(t, tbl, OpMetadataChange, "UPGRADE PROTOCOL", func(tx *Transaction) {
		must(t, tx.UpgradeProtocol(FeatureClustering, FeatureDomainMetadata))
	})
	mustCommit(t, tbl, OpMetadataChange, "CLUSTER BY", func(tx *Transaction) {
		must(t, tx.SetDomain(DomainClustering, `{"clusteringColumns":[["id"]]}`))
	})
	latest, err := tbl.Latest(t.Context())
	must(t, err)
	cols, ok, err := latest.ClusteringColumnsLogical()
	if err != nil || !ok || len(cols) != 1 || cols[0][0] != "id" {
		t.Fatalf("clustering columns %v %v %v", cols, ok, err)
	}
	if tx, _ := latest.Begin(OpMetadataChange, TxnOptions{Operation: "X"}); tx.SetDomain(DomainRowTracking, "{}") == nil {
		t.Fatal("a system domain deltakeeper does not maintain was writable")
	}
}

func TestUpdateMetadata_RefusesPropertiesTheProtocolCannotCarry(t *testing.T) {
	tbl, snap := testTable(t).Create()
	ctx := t.Context()
	try := func(props map[string]string, upgrade ...string) error {
		tx, err := snap.Begin(OpMetadataChange, TxnOptions{Operation: "SET TBLPROPERTIES", NoAutoCheckpoint: true})
		must(t, err)
		md := snap.Metadata()
		md.Configuration = props
		if len(upgrade) > 0 {
			must(t, tx.UpgradeProtocol(upgrade...))
		}
		if err := tx.UpdateMetadata(md); err != nil {
			return err
		}
		_, err = tx.Commit(ctx)
		return err
	}
	for name, props := range map[string]map[string]string{
		"malformed retention": {PropLogRetentionDuration: "forever"},
		"ICT without feature": {PropEnableICT: "true"},
		"column mapping":      {PropColumnMappingMode: "name"},
		"row tracking":        {PropEnableRowTracking: "true"},
	} {
		if err := try(props); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Enabling ICT with its feature records where in-commit timestamps start.
	if err := try(map[string]string{PropEnableICT: "true"}, FeatureInCommitTimestamp); err != nil {
		t.Fatal(err)
	}
	latest, _ := tbl.Latest(ctx)
	v, ts, ok, err := latest.Properties().ICTEnablement()
	if err != nil || !ok || v != 1 || ts != testEpoch.UnixMilli() {
		t.Fatalf("enablement %d %d %v %v", v, ts, ok, err)
	}
	if ict, ok := latest.InCommitTimestamp(); !ok || ict != ts {
		t.Fatalf("ICT of the enabling commit %d %v", ict, ok)
	}
}

func TestLiquidPreviewTable_AllowsRewritesAndExposesItsClusteringColumns(t *testing.T) {
	dir := testutil.ConformanceDir(t)
	store := conformanceStore(t, dir, conformanceTable{Source: "delta-rs", Name: "table_with_liquid_clustering", TableRoot: "delta"})
	snap, err := NewTable(store).Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []Operation{OpRead, OpRewrite, OpVacuum, OpCheckpoint} {
		if err := snap.CheckOperation(op); err != nil {
			t.Errorf("%s refused: %v", op, err)
		}
	}
	if err := snap.CheckOperation(OpMetadataChange); err == nil || !strings.Contains(err.Error(), `"liquid"`) {
		t.Errorf("changing the metadata of a liquid-preview table: want a refusal naming the feature, got %v", err)
	}
	cols, ok, err := snap.ClusteringColumnsLogical()
	if err != nil || !ok || len(cols) != 1 || len(cols[0]) != 1 || cols[0][0] != "id" {
		t.Fatalf("clustering columns = %v, %v, %v; want [[id]]", cols, ok, err)
	}
}
