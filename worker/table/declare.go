package table

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// Declaration is the configuration a DeltaTable declares: table properties and, optionally, the
// liquid clustering columns.
type Declaration struct {
	Properties map[string]string
	// ClusterBy are logical column names (dotted for nested fields); empty with SetClusterBy means
	// "not clustered" (CLUSTER BY NONE).
	ClusterBy    []string
	SetClusterBy bool
}

// settableProperties are the delta.* properties a declaration may set: they tune maintenance and
// statistics but change neither the protocol nor how data files must be read. Properties outside
// the delta. namespace are the user's and always allowed.
var settableProperties = []string{
	delta.PropCheckpointInterval, delta.PropTargetFileSize, delta.PropLogRetentionDuration,
	delta.PropDeletedFileRetention, delta.PropCheckpointRetentionDuration, delta.PropEnableExpiredLogCleanup,
	delta.PropNumIndexedCols, delta.PropStatsColumns, delta.PropCompressionCodec, delta.PropWriteStatsAsJSON,
	delta.PropWriteStatsAsStruct, "delta.autoOptimize.optimizeWrite", "delta.autoOptimize.autoCompact",
	"delta.tuneFileSizesForRewrites",
}

// MaxClusteringColumns is Delta's limit on liquid clustering columns.
const MaxClusteringColumns = 4

// ApplyDeclaration makes the table match the declaration in at most one commit: properties whose
// value differs are set, and the clustering definition (the delta.clustering domain, with the
// clustering and domainMetadata writer features) is written when it differs. A table that already
// matches gets no commit, so running it again commits nothing. Applied lists what changed.
func ApplyDeclaration(ctx context.Context, tbl *delta.Table, d Declaration) (*result.Applied, error) {
	const attempts = 3 // a concurrent metadata change is rare; re-read and re-plan a few times
	var lastErr error
	for range attempts {
		snap, err := tbl.Latest(ctx)
		if err != nil {
			return nil, err
		}
		applied, err := applyOnce(ctx, snap, d)
		if err == nil || !errors.Is(err, delta.ErrConcurrentModification) {
			return applied, err
		}
		lastErr = err
	}
	return nil, lastErr
}

func applyOnce(ctx context.Context, snap *delta.Snapshot, d Declaration) (*result.Applied, error) {
	applied := &result.Applied{}
	loc := snap.Table().Location()
	conf := maps.Clone(snap.Metadata().Configuration)
	if conf == nil {
		conf = map[string]string{}
	}
	for _, k := range slices.Sorted(maps.Keys(d.Properties)) {
		v := d.Properties[k]
		if strings.HasPrefix(strings.ToLower(k), "delta.") && !slices.Contains(settableProperties, k) {
			return nil, result.Refuse(result.ReasonBadArgument, fmt.Errorf(
				"table %s: property %s cannot be declared: it changes the table protocol or how data is read; settable delta.* properties are %s (others are free-form)",
				loc, k, strings.Join(settableProperties, ", ")))
		}
		if cur, ok := conf[k]; !ok || cur != v {
			conf[k] = v
			applied.Properties = append(applied.Properties, k)
		}
	}
	if err := validateProperties(conf); err != nil {
		return nil, result.Refuse(result.ReasonBadArgument, fmt.Errorf("table %s: %w", loc, err))
	}
	var domain string
	if d.SetClusterBy {
		cfg, changed, err := clusteringChange(snap, d.ClusterBy)
		if err != nil {
			return nil, result.Refuse(result.ReasonBadArgument, fmt.Errorf("table %s: cluster by %s: %w", loc, strings.Join(d.ClusterBy, ","), err))
		}
		if changed {
			domain = cfg
			applied.ClusteringColumns = append([]string{}, d.ClusterBy...)
			if len(d.ClusterBy) == 0 {
				applied.ClusteringColumns = []string{"none"}
			}
		}
	}
	if len(applied.Properties) == 0 && domain == "" {
		return applied, nil
	}
	op := "SET TBLPROPERTIES"
	if domain != "" {
		op = "CLUSTER BY"
	}
	tx, err := snap.Begin(delta.OpMetadataChange, delta.TxnOptions{Operation: op, OperationParameters: map[string]string{}})
	if err != nil {
		return nil, err
	}
	if len(applied.Properties) > 0 {
		md := snap.Metadata()
		md.Configuration = conf
		if err := tx.UpdateMetadata(md); err != nil {
			return nil, err
		}
	}
	if domain != "" {
		p := snap.Protocol()
		if !p.HasWriterFeature(delta.FeatureClustering) || !p.HasWriterFeature(delta.FeatureDomainMetadata) {
			if err := tx.UpgradeProtocol(delta.FeatureClustering, delta.FeatureDomainMetadata); err != nil {
				return nil, err
			}
		}
		tx.ReadDomain(delta.DomainClustering)
		if err := tx.SetDomain(delta.DomainClustering, domain); err != nil {
			return nil, err
		}
	}
	res, err := tx.Commit(ctx)
	if err != nil {
		return nil, err
	}
	v := int64(res.Version)
	applied.Version = &v
	return applied, nil
}

// validateProperties parses every typed property, so a declaration cannot commit a value the
// maintenance code would later refuse (or misread).
func validateProperties(conf map[string]string) error {
	p := delta.TableProperties(conf)
	checks := []func() error{
		func() error { _, err := p.CheckpointInterval(); return err },
		func() error { _, _, err := p.TargetFileSize(); return err },
		func() error { _, err := p.LogRetention(); return err },
		func() error { _, err := p.DeletedFileRetention(); return err },
		func() error { _, err := p.CheckpointRetention(); return err },
		func() error { _, err := p.NumIndexedCols(); return err },
		func() error { _, _, err := p.StatsColumns(); return err },
		func() error { _, err := p.WriteStatsAsJSON(); return err },
		func() error { _, err := p.WriteStatsAsStruct(); return err },
	}
	for _, c := range checks {
		if err := c(); err != nil {
			return err
		}
	}
	switch p.CompressionCodec() {
	case "zstd", "snappy", "gzip", "lz4", "lz4_raw", "brotli", "uncompressed", "none":
	default:
		return fmt.Errorf("%s=%q: use zstd, snappy, gzip, lz4_raw, brotli or uncompressed", delta.PropCompressionCodec, p.CompressionCodec())
	}
	return nil
}

// clusteringEligible are the types Delta can cluster by (they have min/max statistics).
var clusteringEligible = []string{types.TypeByte, types.TypeShort, types.TypeInteger, types.TypeLong, types.TypeFloat,
	types.TypeDouble, types.TypeDecimal, types.TypeDate, types.TypeTimestamp, types.TypeTimestampNTZ, types.TypeString}

// clusteringChange validates the declared clustering columns and returns the delta.clustering domain
// configuration, and whether it differs from the table's.
func clusteringChange(snap *delta.Snapshot, columns []string) (string, bool, error) {
	current, clustered, err := snap.ClusteringColumnsLogical()
	if err != nil {
		return "", false, err
	}
	if len(columns) == 0 {
		if !clustered || len(current) == 0 {
			return "", false, nil
		}
		return `{"clusteringColumns":[]}`, true, nil
	}
	if len(columns) > MaxClusteringColumns {
		return "", false, fmt.Errorf("%d columns: liquid clustering allows 1 to %d", len(columns), MaxClusteringColumns)
	}
	if len(snap.Metadata().PartitionColumns) > 0 {
		return "", false, fmt.Errorf("the table is partitioned by %s, and a partitioned table cannot be clustered", strings.Join(snap.Metadata().PartitionColumns, ", "))
	}
	statsCols, err := snap.StatsColumns()
	if err != nil {
		return "", false, err
	}
	physical := make([][]string, 0, len(columns))
	var logical [][]string
	for _, c := range columns {
		path := strings.Split(c, ".")
		f, phys, err := delta.ResolveColumn(snap.Schema(), snap.ColumnMappingMode(), path)
		if err != nil {
			return "", false, err
		}
		p, ok := f.Type.(*types.PrimitiveType)
		if !ok || !slices.Contains(clusteringEligible, p.Name) {
			return "", false, fmt.Errorf("column %s is %s; clustering columns must be numeric, decimal, date, timestamp, timestamp_ntz or string", c, f.Type)
		}
		hasStats := slices.ContainsFunc(statsCols, func(s []string) bool { return slices.EqualFunc(s, path, strings.EqualFold) })
		if !hasStats && !(clustered && slices.ContainsFunc(current, func(s []string) bool { return slices.EqualFunc(s, path, strings.EqualFold) })) {
			return "", false, fmt.Errorf("column %s has no statistics (only the first %s columns get them); list it in %s first",
				c, "delta.dataSkippingNumIndexedCols", delta.PropStatsColumns)
		}
		for _, l := range logical {
			if slices.EqualFunc(l, path, strings.EqualFold) {
				return "", false, fmt.Errorf("column %s is listed twice", c)
			}
		}
		logical = append(logical, path)
		physical = append(physical, phys)
	}
	if clustered && slices.EqualFunc(current, logical, func(a, b []string) bool { return slices.EqualFunc(a, b, strings.EqualFold) }) {
		return "", false, nil
	}
	data, err := json.Marshal(struct {
		ClusteringColumns [][]string `json:"clusteringColumns"`
	}{physical})
	if err != nil {
		return "", false, err
	}
	return string(data), true, nil
}
