package table

import "testing"

func TestRowGroupBytes_AQuarterOfTheTargetBetweenTheFloorAndTheCap(t *testing.T) {
	cases := []struct {
		name   string
		target int64
		want   int64
	}{
		{"a toy target gets the floor", 4 << 10, 8 << 10},
		{"at the floor", 32 << 10, 8 << 10},
		{"the clustering benchmark's quick target", 320 << 10, 80 << 10},
		{"14 MiB", 14 << 20, 14 << 20 / 4},
		{"at the cap", 64 << 20, 16 << 20},
		{"Delta's default target gets the cap", 100 << 20, 16 << 20},
		{"1 GiB", 1 << 30, 16 << 20},
	}
	for _, tc := range cases {
		if got := rowGroupBytes(tc.target); got != tc.want {
			t.Errorf("%s: rowGroupBytes(%d) = %d, want %d", tc.name, tc.target, got, tc.want)
		}
	}
}
