package delta

import (
	"bufio"
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzScanner_AgreesWithEncodingJSON: the streaming scanner (used for lines longer than the read
// buffer) decodes a line to the same action as encoding/json on the whole line, and refuses what
// it refuses.
func FuzzScanner_AgreesWithEncodingJSON(f *testing.F) {
	for _, seed := range []string{
		cAdd("f1", dvA), cRemove("p=a/x%20y.parquet", dvB),
		`{"commitInfo":{"timestamp":1,"operation":"WRITE","operationParameters":{"mode":"Append","n":3},"isBlindAppend":true,"txnId":"x"}}`,
		testProtocol, metaDataLine(schemaIDP, `["p"]`),
		`{"txn":{"appId":"a","version":3,"lastUpdated":null}}`,
		`{"domainMetadata":{"domain":"delta.clustering","configuration":"{\"clusteringColumns\":[[\"a\"]]}","removed":false}}`,
		`{"cdc":{"path":"x","partitionValues":{},"size":1,"dataChange":false}}`,
		`{"unknownAction":{"a":[1,2,{"b":"\\"\u00e9"}]},"add":null}`,
		`{"Add":{"path":"case","size":1}}`, ` { "add" : { "path" : "spaced" , "size" : 2 } } `,
		`{"add":{"path":"x","size":1e3}}`, `{"add":{"path":"x"`, `{"add":[1,}`, `{"add":tru}`, `null`, `[]`, `{}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsAny(line, "\n") || len(bytes.TrimSpace([]byte(line))) == 0 {
			return // one non-blank line
		}
		d := &lineDecoder{key: "k", opts: readOptions{commitInfo: true}, line: 1}
		whole, wholeErr := d.decodeLine([]byte(line), 1)
		s := &scanner{r: bufio.NewReaderSize(strings.NewReader(line), 16)}
		streamed, streamErr := s.action(readOptions{commitInfo: true})
		if streamErr == nil {
			streamErr = s.endOfLine()
		}
		if (wholeErr == nil) != (streamErr == nil) {
			t.Fatalf("%q: whole-line err %v, streamed err %v", line, wholeErr, streamErr)
		}
		if wholeErr != nil {
			return
		}
		streamed.CDC = nil
		if whole.CommitInfo != nil && streamed.CommitInfo != nil {
			// Raw differs in layout (the kept fields are reassembled); the decoded fields must not.
			w, st := *whole.CommitInfo, *streamed.CommitInfo
			w.Raw, st.Raw = nil, nil
			if !reflect.DeepEqual(w, st) {
				t.Fatalf("%q: commitInfo %+v vs %+v", line, w, st)
			}
			whole.CommitInfo, streamed.CommitInfo = nil, nil
		}
		wj, _ := json.Marshal(whole)
		sj, _ := json.Marshal(streamed)
		if !bytes.Equal(wj, sj) {
			t.Fatalf("%q:\n whole    %s\n streamed %s", line, wj, sj)
		}
	})
}
