package storage_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/internal/testutil/s3server"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

func TestParseLocation(t *testing.T) {
	cwd, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		in      string
		want    storage.Location
		wantErr string
	}{
		{in: "s3://bucket/tables/events", want: storage.Location{Scheme: "s3", Bucket: "bucket", Path: "tables/events"}},
		{in: "s3://bucket/tables/events/", want: storage.Location{Scheme: "s3", Bucket: "bucket", Path: "tables/events"}},
		{in: "s3://bucket", want: storage.Location{Scheme: "s3", Bucket: "bucket"}},
		{in: "s3a://bucket/t", want: storage.Location{Scheme: "s3", Bucket: "bucket", Path: "t"}},
		{in: "S3N://bucket/t", want: storage.Location{Scheme: "s3", Bucket: "bucket", Path: "t"}},
		{in: "s3://bucket/a b/c%d", want: storage.Location{Scheme: "s3", Bucket: "bucket", Path: "a b/c%d"}},
		{in: "file:///data/t", want: storage.Location{Scheme: "file", Path: "/data/t"}},
		{in: "file:/data/t", want: storage.Location{Scheme: "file", Path: "/data/t"}},
		{in: "file://localhost/data/t/", want: storage.Location{Scheme: "file", Path: "/data/t"}},
		{in: "/data/t", want: storage.Location{Scheme: "file", Path: "/data/t"}},
		{in: "rel/t", want: storage.Location{Scheme: "file", Path: filepath.Join(cwd, "rel", "t")}},
		{in: "data:2024/t", want: storage.Location{Scheme: "file", Path: filepath.Join(cwd, "data:2024", "t")}},
		{in: "", wantErr: "empty location"},
		{in: "s3://", wantErr: "want s3://bucket/prefix"},
		{in: "s3:bucket/t", wantErr: "want s3://bucket/prefix"},
		{in: "s3://AKIA:secret@bucket/t", wantErr: "must not contain credentials"},
		{in: "file://otherhost/data", wantErr: "remote host"},
		{in: "file:relative", wantErr: "absolute path"},
		{in: "gs://bucket/t/", want: storage.Location{Scheme: "gs", Bucket: "bucket", Path: "t"}},
		{in: "gs://bucket", want: storage.Location{Scheme: "gs", Bucket: "bucket"}},
		{in: "gs://", wantErr: "want gs://bucket/prefix"},
		{in: "gs://user:secret@bucket/t", wantErr: "must not contain credentials"},
		{in: "abfss://c@acct.dfs.core.windows.net/t/x/", want: storage.Location{Scheme: "abfss", Bucket: "c", Account: "acct.dfs.core.windows.net", Path: "t/x"}},
		{in: "ABFS://c@ACCT.dfs.core.windows.net/t/x", want: storage.Location{Scheme: "abfss", Bucket: "c", Account: "acct.dfs.core.windows.net", Path: "t/x"}},
		{in: "wasbs://c@acct.blob.core.windows.net/t/x", want: storage.Location{Scheme: "abfss", Bucket: "c", Account: "acct.dfs.core.windows.net", Path: "t/x"}},
		{in: "wasb://c@acct.blob.core.windows.net/t/x", want: storage.Location{Scheme: "abfss", Bucket: "c", Account: "acct.dfs.core.windows.net", Path: "t/x"}},
		{in: "az://c/t/x", want: storage.Location{Scheme: "abfss", Bucket: "c", Path: "t/x"}},
		{in: "azure://c/t/x", want: storage.Location{Scheme: "abfss", Bucket: "c", Path: "t/x"}},
		{in: "abfss://c@acct.dfs.core.chinacloudapi.cn/t", want: storage.Location{Scheme: "abfss", Bucket: "c", Account: "acct.dfs.core.chinacloudapi.cn", Path: "t"}},
		{in: "abfss://Sales@onelake.dfs.fabric.microsoft.com/Lakehouse1.Lakehouse/Tables/orders", want: storage.Location{
			Scheme: "abfss", Bucket: "Sales", Account: "onelake.dfs.fabric.microsoft.com", Path: "Lakehouse1.Lakehouse/Tables/orders"}},
		{in: "abfss://acct.dfs.core.windows.net/t", wantErr: "want abfss://container@account"},
		{in: "abfss://c@acct.queue.core.windows.net/t", wantErr: "neither a Blob nor a DFS endpoint"},
		{in: "abfss://c:secret@acct.dfs.core.windows.net/t", wantErr: "must not contain credentials"},
		{in: "az://c@acct/t", wantErr: "az:// takes no account"},
		{in: "az://", wantErr: "want abfss://container@account"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := storage.ParseLocation(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "secret") {
					t.Fatalf("error echoes a credential: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("ParseLocation = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestRelative_MapsAbsoluteURIsUnderTheRootToKeys(t *testing.T) {
	s3st, err := storage.NewS3(ctx, storage.S3Config{AccessKeyID: "AKIATEST", SecretAccessKey: "x"}, "bucket", "tables/t")
	if err != nil {
		t.Fatal(err)
	}
	bucketRoot, err := storage.NewS3(ctx, storage.S3Config{AccessKeyID: "AKIATEST", SecretAccessKey: "x"}, "bucket", "")
	if err != nil {
		t.Fatal(err)
	}
	local, err := storage.NewLocal("/data/t")
	if err != nil {
		t.Fatal(err)
	}
	azst, err := storage.NewAzure(ctx, storage.AzureConfig{AccountKey: "a2V5"}, "acct", "c", "tables/t")
	if err != nil {
		t.Fatal(err)
	}
	gsst, err := storage.NewGCS(ctx, storage.GCSConfig{Endpoint: "127.0.0.1:1"}, "bucket", "tables/t")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		store   storage.Store
		uri     string
		wantKey string
		wantOK  bool
	}{
		{"s3 object under the table", s3st, "s3://bucket/tables/t/date=2024-01-01/a b.parquet", "date=2024-01-01/a b.parquet", true},
		{"s3a scheme written by Spark", s3st, "s3a://bucket/tables/t/x.parquet", "x.parquet", true},
		{"sibling table sharing a name prefix", s3st, "s3://bucket/tables/t2/x.parquet", "", false},
		{"other bucket", s3st, "s3://other/tables/t/x.parquet", "", false},
		{"the root itself", s3st, "s3://bucket/tables/t", "", false},
		{"relative path is already a key", s3st, "x.parquet", "", false},
		{"bucket-rooted store", bucketRoot, "s3://bucket/any/x.parquet", "any/x.parquet", true},
		{"file URI under the table", local, "file:///data/t/x.parquet", "x.parquet", true},
		{"Hadoop file URI", local, "file:/data/t/p=1/x.parquet", "p=1/x.parquet", true},
		{"file elsewhere", local, "file:///data/other/x.parquet", "", false},
		{"scheme mismatch", local, "s3://bucket/data/t/x.parquet", "", false},
		{"abfss object under the table", azst, "abfss://c@acct.dfs.core.windows.net/tables/t/p=1/x.parquet", "p=1/x.parquet", true},
		{"wasbs form of the same account", azst, "wasbs://c@acct.blob.core.windows.net/tables/t/x.parquet", "x.parquet", true},
		{"other storage account", azst, "abfss://c@other.dfs.core.windows.net/tables/t/x.parquet", "", false},
		{"other container", azst, "abfss://d@acct.dfs.core.windows.net/tables/t/x.parquet", "", false},
		{"az:// leaves the account to the configuration", azst, "az://c/tables/t/x.parquet", "", false},
		{"gs object under the table", gsst, "gs://bucket/tables/t/x.parquet", "x.parquet", true},
		{"other gs bucket", gsst, "gs://other/tables/t/x.parquet", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, ok := storage.Relative(tc.store, tc.uri)
			if key != tc.wantKey || ok != tc.wantOK {
				t.Fatalf("Relative(%s, %q) = %q, %t; want %q, %t", tc.store.Location(), tc.uri, key, ok, tc.wantKey, tc.wantOK)
			}
			if ok {
				if back, _ := storage.Relative(tc.store, storage.URI(tc.store, key)); back != key {
					t.Fatalf("URI(%q) = %q does not map back", key, storage.URI(tc.store, key))
				}
			}
		})
	}
}

func TestOpenURI_ReadsObjectsOutsideTheTable(t *testing.T) {
	t.Run("file", func(t *testing.T) {
		st := newLocal(t)
		mustPut(t, st, "elsewhere/x.parquet", []byte("local bytes"))
		other, key, err := storage.OpenURI(ctx, storage.URI(st, "elsewhere/x.parquet"), storage.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if other.Location() != "file:///" {
			t.Errorf("store rooted at %s, want file:/// so one store serves every file", other.Location())
		}
		if got := mustGet(t, other, key); string(got) != "local bytes" {
			t.Fatalf("Get = %q", got)
		}
	})
	t.Run("s3", func(t *testing.T) {
		srv := s3server.Start(t)
		st := openS3(t, srv, srv.S3Config(), "source/table")
		mustPut(t, st, "part-0.parquet", []byte("s3 bytes"))
		other, key, err := storage.OpenURI(ctx, "s3a://"+srv.Bucket+"/source/table/part-0.parquet", storage.Config{S3: srv.S3Config()})
		if err != nil {
			t.Fatal(err)
		}
		if other.Location() != "s3://"+srv.Bucket || key != "source/table/part-0.parquet" {
			t.Fatalf("OpenURI = %s, %q; want the bucket root and the full key", other.Location(), key)
		}
		if got := mustGet(t, other, key); string(got) != "s3 bytes" {
			t.Fatalf("Get = %q", got)
		}
	})
	t.Run("relative path is refused", func(t *testing.T) {
		if _, _, err := storage.OpenURI(ctx, "part-0.parquet", storage.Config{}); err == nil {
			t.Fatal("OpenURI of a relative path succeeded")
		}
	})
}

func TestConfigFromEnv(t *testing.T) {
	aws := []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION",
		"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_CA_BUNDLE", "AWS_MAX_ATTEMPTS", storage.EnvS3PathStyle, storage.EnvS3MaxBackoff}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		check   func(storage.S3Config) bool
		openErr string
	}{
		{
			name: "static keys, region, endpoint, CA bundle, path style",
			env: map[string]string{"AWS_ACCESS_KEY_ID": "AKIAENV", "AWS_SECRET_ACCESS_KEY": "s", "AWS_SESSION_TOKEN": "tok",
				"AWS_REGION": "eu-west-1", "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:1", "AWS_CA_BUNDLE": "/ca.pem",
				"AWS_MAX_ATTEMPTS": "4", storage.EnvS3PathStyle: "true", storage.EnvS3MaxBackoff: "250ms"},
			check: func(c storage.S3Config) bool {
				return c.AccessKeyID == "AKIAENV" && c.SecretAccessKey == "s" && c.SessionToken == "tok" &&
					c.Region == "eu-west-1" && c.Endpoint == "http://127.0.0.1:1" && c.CABundleFile == "/ca.pem" &&
					c.MaxAttempts == 4 && c.UsePathStyle && c.MaxBackoff == 250*time.Millisecond
			},
			openErr: "reading S3 CA bundle", // the bundle file is made up
		},
		{
			name:  "fallbacks: AWS_DEFAULT_REGION and AWS_ENDPOINT_URL",
			env:   map[string]string{"AWS_DEFAULT_REGION": "us-west-2", "AWS_ENDPOINT_URL": "https://s3.local"},
			check: func(c storage.S3Config) bool { return c.Region == "us-west-2" && c.Endpoint == "https://s3.local" },
		},
		{
			name:  "nothing set means the default credential chain",
			env:   map[string]string{},
			check: func(c storage.S3Config) bool { return c.AccessKeyID == "" && !c.UsePathStyle && c.Endpoint == "" },
		},
		{
			name:    "unusable path style fails at open, naming the variable",
			env:     map[string]string{storage.EnvS3PathStyle: "yess", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b"},
			check:   func(storage.S3Config) bool { return true },
			openErr: storage.EnvS3PathStyle + `="yess" is not a boolean`,
		},
		{
			name:    "unusable max backoff fails at open, naming the variable",
			env:     map[string]string{storage.EnvS3MaxBackoff: "soon", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b"},
			check:   func(storage.S3Config) bool { return true },
			openErr: storage.EnvS3MaxBackoff + `="soon" is not a positive duration`,
		},
		{
			name:    "access key without secret fails at open",
			env:     map[string]string{"AWS_ACCESS_KEY_ID": "AKIAENV"},
			check:   func(storage.S3Config) bool { return true },
			openErr: "secret access key is empty",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, name := range aws {
				t.Setenv(name, tc.env[name])
			}
			cfg := storage.ConfigFromEnv()
			if !tc.check(cfg.S3) {
				t.Fatalf("ConfigFromEnv = %+v", cfg.S3)
			}
			_, err := storage.Open(ctx, "s3://bucket/t", cfg)
			switch {
			case tc.openErr == "" && err != nil:
				t.Fatalf("Open: %v", err)
			case tc.openErr != "" && (err == nil || !strings.Contains(err.Error(), tc.openErr)):
				t.Fatalf("Open: err = %v, want one mentioning %q", err, tc.openErr)
			}
		})
	}
}

func TestCanonical_OneFormPerStorage(t *testing.T) {
	cfg := storage.Config{Azure: storage.AzureConfig{Account: "acct"}}
	for _, group := range [][]string{
		{"abfss://c@acct.dfs.core.windows.net/t", "abfs://c@acct.dfs.core.windows.net/t/", "wasbs://c@acct.blob.core.windows.net/t",
			"az://c/t", "azure://c//t", "abfss://c@ACCT.DFS.core.windows.net/t"},
		{"s3://b/t", "s3a://b/t", "s3n://b/t/"},
		{"gs://b/t", "gs://b/t/"},
		{"abfss://ws@onelake.dfs.fabric.microsoft.com/item.Lakehouse/Tables/x", "abfss://ws@onelake.blob.fabric.microsoft.com/item.Lakehouse/Tables/x/"},
		{"/data/t", "file:///data/t", "file:/data/t/", "file://localhost/data/t"},
	} {
		want, err := storage.Canonical(group[0], cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, loc := range group[1:] {
			got, err := storage.Canonical(loc, cfg)
			if err != nil || got != want {
				t.Errorf("Canonical(%q) = %q, %v; want %q like %q", loc, got, err, want, group[0])
			}
		}
	}
	// Different accounts, containers or clouds stay different.
	distinct := []string{"abfss://c@acct.dfs.core.windows.net/t", "abfss://c@other.dfs.core.windows.net/t",
		"abfss://d@acct.dfs.core.windows.net/t", "gs://c/t", "s3://c/t"}
	seen := map[string]string{}
	for _, loc := range distinct {
		got, err := storage.Canonical(loc, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if prev, dup := seen[got]; dup {
			t.Errorf("%q and %q have the same canonical form %q", prev, loc, got)
		}
		seen[got] = loc
	}
	if got, _ := storage.Canonical("abfss://c@acct.dfs.core.windows.net/t", cfg); got != "abfss://c@acct.dfs.core.windows.net/t" {
		t.Errorf("canonical Azure form = %q", got)
	}
	if _, err := storage.Canonical("az://c/t", storage.Config{}); err == nil || !strings.Contains(err.Error(), "AZURE_STORAGE_ACCOUNT") {
		t.Errorf("az:// without an account: err = %v, want one naming AZURE_STORAGE_ACCOUNT", err)
	}
}

func TestConfigFromEnv_ReadsTheAzureAndGCSVariables(t *testing.T) {
	t.Setenv("AZURE_STORAGE_ACCOUNT", "acct")
	t.Setenv("AZURE_STORAGE_KEY", "a2V5")
	t.Setenv("AZURE_STORAGE_SAS_TOKEN", "")
	t.Setenv(storage.EnvAzureEndpoint, "http://127.0.0.1:10000/acct")
	t.Setenv(storage.EnvGCSEmulatorHost, "127.0.0.1:4443")
	cfg := storage.ConfigFromEnv()
	if cfg.Azure.Account != "acct" || cfg.Azure.AccountKey != "a2V5" || cfg.Azure.Endpoint != "http://127.0.0.1:10000/acct" {
		t.Errorf("Azure config from the environment: %+v", cfg.Azure)
	}
	if cfg.GCS.Endpoint != "127.0.0.1:4443" {
		t.Errorf("GCS config from the environment: %+v", cfg.GCS)
	}
	got, err := storage.Canonical("az://c/t", cfg)
	if err != nil || got != "abfss://c@acct.dfs.core.windows.net/t" {
		t.Errorf("Canonical(az://c/t) with AZURE_STORAGE_ACCOUNT = %q, %v", got, err)
	}
	t.Setenv(storage.EnvAzureMaxBackoff, "soon")
	if _, err := storage.Open(ctx, "az://c/t", storage.ConfigFromEnv()); err == nil || !strings.Contains(err.Error(), storage.EnvAzureMaxBackoff) {
		t.Errorf("unusable %s: Open err = %v, want one naming it", storage.EnvAzureMaxBackoff, err)
	}
}
