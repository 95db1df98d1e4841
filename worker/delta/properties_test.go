package delta

import (
	"slices"
	"testing"
	"time"
)

func TestParseInterval_SparkForms(t *testing.T) {
	cases := map[string]time.Duration{
		"interval 7 days":          7 * 24 * time.Hour,
		"interval 1 week":          7 * 24 * time.Hour,
		"30 days":                  30 * 24 * time.Hour,
		"INTERVAL 1 day 12 hours":  36 * time.Hour,
		"interval '2' days":        48 * time.Hour,
		"interval 90 minutes":      90 * time.Minute,
		"interval 1 hour 1 second": time.Hour + time.Second,
	}
	for in, want := range cases {
		got, err := ParseInterval(in)
		if err != nil || got != want {
			t.Errorf("ParseInterval(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "interval", "7", "interval 1 month", "interval x days", "interval -1 days"} {
		if d, err := ParseInterval(bad); err == nil {
			t.Errorf("ParseInterval(%q) = %v, want an error", bad, d)
		}
	}
}

func TestTableProperties_TypedAccessorsAndDefaults(t *testing.T) {
	empty := TableProperties{}
	if n, _ := empty.CheckpointInterval(); n != 10 {
		t.Errorf("default checkpoint interval %d", n)
	}
	if d, _ := empty.LogRetention(); d != 30*24*time.Hour {
		t.Errorf("default log retention %v", d)
	}
	if d, _ := empty.DeletedFileRetention(); d != 7*24*time.Hour {
		t.Errorf("default deleted file retention %v", d)
	}
	if n, _ := empty.NumIndexedCols(); n != 32 {
		t.Errorf("default indexed cols %d", n)
	}
	if empty.CompressionCodec() != "zstd" {
		t.Errorf("default codec %q", empty.CompressionCodec())
	}
	if m, _ := empty.ColumnMappingMode(); m != ColumnMappingNone {
		t.Errorf("default mapping %q", m)
	}
	p := TableProperties{
		PropCheckpointInterval: "5", PropTargetFileSize: "128mb", PropColumnMappingMode: "name",
		PropStatsColumns: "a, b.c ,`x.y`.z", PropCompressionCodec: "SNAPPY", PropEnableICT: "TRUE",
		PropICTEnablementVersion: "3", PropICTEnablementTimestamp: "1700000000000",
	}
	if n, _ := p.CheckpointInterval(); n != 5 {
		t.Errorf("interval %d", n)
	}
	if n, ok, err := p.TargetFileSize(); n != 128<<20 || !ok || err != nil {
		t.Errorf("target size %d %v %v", n, ok, err)
	}
	if m, _ := p.ColumnMappingMode(); m != ColumnMappingName {
		t.Errorf("mapping %q", m)
	}
	cols, ok, err := p.StatsColumns()
	if err != nil || !ok || len(cols) != 3 || !slices.Equal(cols[1], []string{"b", "c"}) || !slices.Equal(cols[2], []string{"x.y", "z"}) {
		t.Errorf("stats columns %q %v %v", cols, ok, err)
	}
	if p.CompressionCodec() != "snappy" {
		t.Errorf("codec %q", p.CompressionCodec())
	}
	if v, ts, ok, err := p.ICTEnablement(); v != 3 || ts != 1700000000000 || !ok || err != nil {
		t.Errorf("ICT enablement %d %d %v %v", v, ts, ok, err)
	}
	bad := TableProperties{PropCheckpointInterval: "ten", PropColumnMappingMode: "magic", PropLogRetentionDuration: "forever", PropWriteStatsAsJSON: "yes"}
	if _, err := bad.CheckpointInterval(); err == nil {
		t.Error("bad interval accepted")
	}
	if _, err := bad.ColumnMappingMode(); err == nil {
		t.Error("bad mapping mode accepted")
	}
	if _, err := bad.LogRetention(); err == nil {
		t.Error("bad retention accepted")
	}
	if _, err := bad.WriteStatsAsJSON(); err == nil {
		t.Error("bad boolean accepted")
	}
}
