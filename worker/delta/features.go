package delta

import (
	"slices"
	"sort"
)

// Table feature names (PROTOCOL.md §Table Features and appendix; Spark TableFeature.scala).
const (
	FeatureAppendOnly          = "appendOnly"
	FeatureInvariants          = "invariants"
	FeatureCheckConstraints    = "checkConstraints"
	FeatureGeneratedColumns    = "generatedColumns"
	FeatureAllowColumnDefaults = "allowColumnDefaults"
	FeatureChangeDataFeed      = "changeDataFeed"
	FeatureColumnMapping       = "columnMapping"
	FeatureIdentityColumns     = "identityColumns"
	FeatureDeletionVectors     = "deletionVectors"
	FeatureRowTracking         = "rowTracking"
	FeatureTimestampNTZ        = "timestampNtz"
	FeatureDomainMetadata      = "domainMetadata"
	FeatureV2Checkpoint        = "v2Checkpoint"
	FeatureCatalogManaged      = "catalogManaged"
	FeatureCatalogOwnedPreview = "catalogOwned-preview"
	FeatureIcebergCompatV1     = "icebergCompatV1"
	FeatureIcebergCompatV2     = "icebergCompatV2"
	FeatureIcebergCompatV3     = "icebergCompatV3"
	FeatureClustering          = "clustering"
	// FeatureLiquidPreview is Databricks' preview name of clustering (Runtime 13.x): the columns live in
	// the delta.liquid domain instead of delta.clustering.
	FeatureLiquidPreview        = "liquid"
	FeatureVacuumProtocolCheck  = "vacuumProtocolCheck"
	FeatureInCommitTimestamp    = "inCommitTimestamp"
	FeatureICTPreview           = "inCommitTimestamp-preview"
	FeatureTypeWidening         = "typeWidening"
	FeatureTypeWideningPreview  = "typeWidening-preview"
	FeatureVariantType          = "variantType"
	FeatureVariantTypePreview   = "variantType-preview"
	FeatureVariantShredding     = "variantShredding"
	FeatureVariantShreddingPrev = "variantShredding-preview"
	FeatureCheckpointProtection = "checkpointProtection"
	FeatureMaterializePartCols  = "materializePartitionColumns"
	FeatureCoordinatedCommits   = "coordinatedCommits-preview"
	FeatureRedirectReaderWriter = "redirectReaderWriter-preview"
	FeatureRedirectWriterOnly   = "redirectWriterOnly-preview"
	FeatureGeospatial           = "geospatial"
)

// Highest protocol versions whose meaning deltakeeper knows.
const (
	maxReaderVersion = 3
	maxWriterVersion = 7
)

// legacyWriterFeatures lists what each legacy writer version implies (PROTOCOL.md §Writer
// Version Requirements); versions are cumulative.
var legacyWriterFeatures = [][]string{
	2: {FeatureAppendOnly, FeatureInvariants},
	3: {FeatureCheckConstraints},
	4: {FeatureChangeDataFeed, FeatureGeneratedColumns},
	5: {FeatureColumnMapping},
	6: {FeatureIdentityColumns},
}

// ReaderFeatureSet returns the reader features in force: the explicit list from reader version 3,
// otherwise what the legacy version implies (2 → columnMapping).
func (p Protocol) ReaderFeatureSet() []string {
	switch {
	case p.MinReaderVersion >= 3:
		return sortedUnique(p.ReaderFeatures)
	case p.MinReaderVersion == 2:
		return []string{FeatureColumnMapping}
	}
	return nil
}

// WriterFeatureSet returns the writer features in force: the explicit list from writer version 7
// (reader features are writer features too), otherwise the legacy implications.
func (p Protocol) WriterFeatureSet() []string {
	if p.MinWriterVersion >= 7 {
		return sortedUnique(append(slices.Clone(p.WriterFeatures), p.ReaderFeatureSet()...))
	}
	var out []string
	for v := 2; v <= p.MinWriterVersion && v < len(legacyWriterFeatures); v++ {
		out = append(out, legacyWriterFeatures[v]...)
	}
	return sortedUnique(append(out, p.ReaderFeatureSet()...))
}

// HasWriterFeature reports whether f is supported by the table (listed or implied).
func (p Protocol) HasWriterFeature(f string) bool { return slices.Contains(p.WriterFeatureSet(), f) }

// HasReaderFeature reports whether f is a reader feature of the table (listed or implied).
func (p Protocol) HasReaderFeature(f string) bool { return slices.Contains(p.ReaderFeatureSet(), f) }

// isReaderWriterFeature lists the features that belong in readerFeatures too.
var readerWriterFeatures = map[string]bool{
	FeatureColumnMapping: true, FeatureDeletionVectors: true, FeatureTimestampNTZ: true,
	FeatureV2Checkpoint: true, FeatureCatalogManaged: true, FeatureCatalogOwnedPreview: true,
	FeatureVacuumProtocolCheck: true, FeatureTypeWidening: true, FeatureTypeWideningPreview: true,
	FeatureVariantType: true, FeatureVariantTypePreview: true, FeatureVariantShredding: true,
	FeatureVariantShreddingPrev: true, FeatureGeospatial: true, FeatureRedirectReaderWriter: true,
}

// WithFeatures returns a copy of p upgraded to table-features versions (reader 3 only when a
// reader-writer feature needs it, writer 7) with the given features added, keeping every feature
// the legacy versions implied. It never removes a feature.
func (p Protocol) WithFeatures(features ...string) Protocol {
	writer := p.WriterFeatureSet()
	reader := p.ReaderFeatureSet()
	for _, f := range features {
		writer = append(writer, f)
		if readerWriterFeatures[f] {
			reader = append(reader, f)
		}
	}
	out := Protocol{MinReaderVersion: p.MinReaderVersion, MinWriterVersion: 7, WriterFeatures: sortedUnique(writer)}
	needReader3 := p.MinReaderVersion >= 3
	for _, f := range reader {
		if f != FeatureColumnMapping {
			needReader3 = true
		}
	}
	if needReader3 {
		out.MinReaderVersion = 3
		out.ReaderFeatures = sortedUnique(reader)
	}
	if out.MinReaderVersion < 1 {
		out.MinReaderVersion = 1
	}
	return out
}

func sortedUnique(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	out := slices.Clone(s)
	sort.Strings(out)
	return slices.Compact(out)
}
