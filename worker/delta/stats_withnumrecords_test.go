package delta

import "testing"

func TestWithNumRecords_RecordsTheFooterCountFirstAndKeepsOtherStatistics(t *testing.T) {
	cases := []struct{ name, stats, want string }{
		{"no statistics", "", `{"numRecords":7}`},
		{"bounds without a count", `{"minValues":{"a":1},"maxValues":{"a":9}}`, `{"numRecords":7,"maxValues":{"a":9},"minValues":{"a":1}}`},
		{"unreadable statistics", `{"minValues":`, `{"numRecords":7}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := &AddFile{Path: "p", Stats: c.stats}
			got := a.WithNumRecords(7)
			if got.Stats != c.want || a.Stats != c.stats {
				t.Fatalf("stats %q (original now %q), want %q", got.Stats, a.Stats, c.want)
			}
			if n, ok := leadingNumRecords(got.Stats); !ok || n != 7 {
				t.Errorf("the count is not where the fast path reads it")
			}
		})
	}
}
