package main

import (
	"context"

	"github.com/deltakeeper/deltakeeper/bench/internal/localfs"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// createTable makes an empty table with the schema of the first Parquet source file (all columns
// nullable), so the three formats are converted into the same typed columns.
func createTable(dir, parquetDir string, configure ...func(*delta.CreateOptions)) error {
	ctx := context.Background()
	files, err := localfs.ParquetFiles(parquetDir)
	if err != nil {
		return err
	}
	r, err := localfs.Open(files[0])
	if err != nil {
		return err
	}
	defer r.Close()
	pf, err := parquetio.Open(ctx, r)
	if err != nil {
		return err
	}
	schema, err := pf.Schema()
	if err != nil {
		return err
	}
	schema = types.MapFields(schema, func(f *types.StructField) *types.StructField {
		return &types.StructField{Name: f.Name, Type: f.Type, Nullable: true}
	}).(*types.StructType)
	store, err := storage.NewLocal(dir)
	if err != nil {
		return err
	}
	opts := delta.CreateOptions{Schema: schema}
	for _, c := range configure {
		c(&opts)
	}
	_, err = delta.NewTable(store).Create(ctx, opts)
	return err
}
