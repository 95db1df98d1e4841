package delta

import "testing"

func TestIsDataFileName_RecognisesExactlyWhatDataFileNameReturns(t *testing.T) {
	for _, codec := range []string{"", "zstd", "snappy", "gzip", "lz4", "brotli", "uncompressed"} {
		if n := DataFileName(12, codec); !IsDataFileName(n) {
			t.Errorf("%s is not recognised", n)
		}
	}
	for _, n := range []string{
		"part-00000-9f3c1a52-6d4e-4b8a-9c1d-2e3f4a5b6c7d-c000.snappy.parquet", // Spark, delta-rs
		"part-00000-9f3c1a52-6d4e-4b8a-9c1d-2e3f4a5b6c7d.c000.snappy.parquet.crc",
		"part-0.parquet",
	} {
		if IsDataFileName(n) {
			t.Errorf("%s is taken for deltakeeper's", n)
		}
	}
}
