package delta

import "testing"

func TestObjectKey_DecodesLogPathsExactly(t *testing.T) {
	const table = "s3://bucket/tables/t1"
	cases := []struct {
		name, path, want string
	}{
		{"plain", "part-0000.parquet", "part-0000.parquet"},
		{"escaped equals", "a%3Db/part.parquet", "a=b/part.parquet"},
		{"space", "x%20y/part%20one.parquet", "x y/part one.parquet"},
		{"literal percent in a hive dir", "p=100%2525/f.parquet", "p=100%25/f.parquet"},
		{"plus is not space", "a+b/f.parquet", "a+b/f.parquet"},
		{"null partition dir", "p=__HIVE_DEFAULT_PARTITION__/f.parquet", "p=__HIVE_DEFAULT_PARTITION__/f.parquet"},
		{"absolute under table", "s3://bucket/tables/t1/d%3D1/f.parquet", "d=1/f.parquet"},
		{"absolute s3a scheme", "s3a://bucket/tables/t1/f.parquet", "f.parquet"},
		{"colon after equals is not a scheme", "ts=12:00/f.parquet", "ts=12:00/f.parquet"},
	}
	for _, c := range cases {
		got, err := ObjectKey(table, c.path)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s: ObjectKey(%q) = %q, want %q", c.name, c.path, got, c.want)
		}
	}
	for _, bad := range []string{"", "../other/f.parquet", "a/../../f.parquet", "s3://bucket/elsewhere/f.parquet", "s3://other/tables/t1/f.parquet", "%zz"} {
		if k, err := ObjectKey(table, bad); err == nil {
			t.Errorf("ObjectKey(%q) = %q, want an error", bad, k)
		}
	}
}

func TestEncodePath_RoundTripsThroughObjectKey(t *testing.T) {
	for _, key := range []string{"a=b/c.parquet", "p=x y/f.parquet", "p=100%/f.parquet", "ts=2024-01-01 12:00:00/f.parquet", "ünï/çødé.parquet", "a:b/c"} {
		enc := EncodePath(key)
		got, err := ObjectKey("file:///t", enc)
		if err != nil || got != key {
			t.Errorf("key %q → %q → %q (%v)", key, enc, got, err)
		}
	}
	if got := EncodePath("p=a b%/x.parquet"); got != "p=a%20b%25/x.parquet" {
		t.Errorf("EncodePath = %q", got)
	}
}
