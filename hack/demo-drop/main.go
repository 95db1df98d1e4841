// Command demo-drop writes CSV files of numbered rows under an object-store prefix, as an upstream system
// landing files for a StreamIngest would (`make demo`). Each file is one PUT, so a listing never sees half
// of one. Storage settings come from the environment, as for the worker (AWS_ENDPOINT_URL_S3, …).
//
//	go run ./hack/demo-drop --first-file 0 --files 6 --rows 500 --first-id 1 s3://bucket/landing/clicks/
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

func main() {
	firstFile := flag.Int("first-file", 0, "number of the first file (files are named part-NNNNN.csv)")
	files := flag.Int("files", 1, "files to write")
	rows := flag.Int("rows", 500, "rows per file")
	firstID := flag.Int64("first-id", 1, "id of the first row; ids count up")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: demo-drop [--first-file N] [--files N] [--rows N] [--first-id N] <prefix>")
		os.Exit(2)
	}
	ctx := context.Background()
	store, err := storage.Open(ctx, flag.Arg(0), storage.ConfigFromEnv())
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo-drop: %v\n", err)
		os.Exit(1)
	}
	id := *firstID
	for f := *firstFile; f < *firstFile+*files; f++ {
		var buf bytes.Buffer
		buf.WriteString("id,page,ms\n")
		for range *rows {
			fmt.Fprintf(&buf, "%d,/p/%d,%d\n", id, id%17, id%900)
			id++
		}
		key := fmt.Sprintf("part-%05d.csv", f)
		if err := store.Put(ctx, key, buf.Bytes()); err != nil {
			fmt.Fprintf(os.Stderr, "demo-drop: write %s: %v\n", key, err)
			os.Exit(1)
		}
	}
}
