package delta

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/internal/testutil"
)

// Seeds for the fuzz targets, taken at test time from the conformance tables' logs (a missing
// corpus fails, as everywhere): whole commit files, the add actions' stats and partition values,
// and their deletion-vector descriptors.

type conformanceSeeds struct {
	commits    [][]byte
	stats      []string
	partitions []partitionSeed
	dvs        []DeletionVectorDescriptor
}

type partitionSeed struct{ typeName, value string }

const maxSeedsPerKind = 400 // enough variety; more only slows `go test`

func loadConformanceSeeds(t testing.TB) *conformanceSeeds {
	t.Helper()
	s := &conformanceSeeds{}
	seenStats, seenParts := map[string]bool{}, map[partitionSeed]bool{}
	for _, path := range testutil.ConformanceLogFiles(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) < 64<<10 && len(s.commits) < maxSeedsPerKind {
			s.commits = append(s.commits, data)
		}
		types := map[string]string{} // partition column -> type, from this commit's metaData
		for _, line := range strings.Split(string(data), "\n") {
			var a struct {
				MetaData *struct {
					SchemaString     string   `json:"schemaString"`
					PartitionColumns []string `json:"partitionColumns"`
				} `json:"metaData"`
				Add *struct {
					Stats           string                    `json:"stats"`
					PartitionValues map[string]*string        `json:"partitionValues"`
					DeletionVector  *DeletionVectorDescriptor `json:"deletionVector"`
				} `json:"add"`
			}
			if json.Unmarshal([]byte(line), &a) != nil {
				continue
			}
			if md := a.MetaData; md != nil {
				var schema struct {
					Fields []struct {
						Name string          `json:"name"`
						Type json.RawMessage `json:"type"`
					} `json:"fields"`
				}
				if json.Unmarshal([]byte(md.SchemaString), &schema) == nil {
					for _, f := range schema.Fields {
						var name string
						if json.Unmarshal(f.Type, &name) == nil {
							types[f.Name] = name
						}
					}
				}
			}
			if add := a.Add; add != nil {
				if add.Stats != "" && !seenStats[add.Stats] && len(s.stats) < maxSeedsPerKind {
					seenStats[add.Stats] = true
					s.stats = append(s.stats, add.Stats)
				}
				for col, v := range add.PartitionValues {
					if v == nil || types[col] == "" {
						continue
					}
					ps := partitionSeed{types[col], *v}
					if !seenParts[ps] && len(s.partitions) < maxSeedsPerKind {
						seenParts[ps] = true
						s.partitions = append(s.partitions, ps)
					}
				}
				if add.DeletionVector != nil {
					s.dvs = append(s.dvs, *add.DeletionVector)
				}
			}
		}
	}
	if len(s.commits) == 0 || len(s.stats) == 0 || len(s.partitions) == 0 || len(s.dvs) == 0 {
		t.Fatalf("conformance seeds: %d commits, %d stats, %d partition values, %d deletion vectors; want some of each",
			len(s.commits), len(s.stats), len(s.partitions), len(s.dvs))
	}
	return s
}
