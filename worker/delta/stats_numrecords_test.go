package delta

import "testing"

func TestNumRecords_FastPathAgreesWithTheDecoder(t *testing.T) {
	cases := []struct {
		stats string
		want  int64
		ok    bool
	}{
		{`{"numRecords":123,"minValues":{"a":1},"maxValues":{"a":2},"nullCount":{"a":0}}`, 123, true},
		{`{"numRecords":0}`, 0, true},
		{`{"numRecords":999999999999999999}`, 999999999999999999, true}, // 18 digits: the decoder's
		{`{"numRecords":9223372036854775807,"tightBounds":true}`, 9223372036854775807, true},
		{`{"minValues":{"numRecords":5},"numRecords":7}`, 7, true}, // not leading: decoder
		{`{ "numRecords": 8 }`, 8, true},                           // whitespace: decoder
		{`{"numRecords":null}`, 0, false},
		{`{"numRecords":-1}`, 0, false}, // impossible: no count (the footer has it)
		{`{"numRecords":1.5}`, 0, false},
		{`{"numRecords":12`, 0, false}, // truncated: the decoder refuses it
		{`{"numRecords":012}`, 0, false},
		{`{"numRecords":"3"}`, 0, false},
		{`{"minValues":{}}`, 0, false},
		{``, 0, false},
	}
	for _, tc := range cases {
		n, ok := NumRecords(tc.stats)
		if n != tc.want || ok != tc.ok {
			t.Errorf("NumRecords(%s) = %d, %v; want %d, %v", tc.stats, n, ok, tc.want, tc.ok)
		}
	}
}
