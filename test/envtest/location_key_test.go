package envtest

import (
	"testing"

	"github.com/deltakeeper/deltakeeper/controllers"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// The reconcilers may not import worker/storage, so the lock key's normalisation (controllers.
// CanonicalLocation) is a second implementation of storage.Canonical. This test holds them together: for
// every location form a DeltaTable accepts, both give the same canonical form, or both refuse it.
func TestCanonicalLocation_AgreesWithTheStorageLayer(t *testing.T) {
	cfg := storage.Config{}
	cfg.Azure.Account = "lakeacct"
	locations := []string{
		"s3://lake/sales/orders", "s3://lake/sales/orders/", "s3://lake//sales/orders//", "s3://lake", "s3://lake/",
		"s3a://lake/sales/orders", "s3n://lake/sales/orders/", "S3://lake/x",
		"gs://lake-bucket/t", "gs://lake-bucket/t/", "gs://lake-bucket",
		"abfss://c@acct.dfs.core.windows.net/t", "abfs://c@acct.dfs.core.windows.net/t/", "wasbs://c@acct.blob.core.windows.net/t",
		"wasb://c@ACCT.blob.core.windows.net/t", "abfss://c@acct.dfs.core.chinacloudapi.cn/t", "abfss://c@acct/t",
		"abfss://ws@onelake.dfs.fabric.microsoft.com/item/Tables/t", "az://c/t", "azure://c/t/",
		"file:///data/tables/t", "file:///data/tables/t/", "file:///data//tables/./t", "file:///data/a/../t",
		"file://localhost/data/t", "file:/data/t",
		"s3:/lake/t", "abfss://c/t", "az://c@acct/t", "file://remote/data/t",
	}
	for _, loc := range locations {
		want, wantErr := storage.Canonical(loc, cfg)
		got, err := controllers.CanonicalLocation(loc, "lakeacct")
		if (err != nil) != (wantErr != nil) || got != want {
			t.Errorf("CanonicalLocation(%q) = %q, %v; storage.Canonical = %q, %v", loc, got, err, want, wantErr)
		}
	}
}
