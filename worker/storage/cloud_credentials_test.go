package storage_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/internal/testutil/azurite"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

func TestAzure_CredentialsNeverAppearInErrorsOrLocation(t *testing.T) {
	srv := azurite.Start(t)
	wrongKey := base64.StdEncoding.EncodeToString([]byte("wrong-key-0123456789abcdef0123456789abcdef"))
	const sas = "sv=2023-11-03&ss=b&srt=sco&sp=rwdlac&se=2099-01-01T00:00:00Z&sig=c2VjcmV0LXNpZ25hdHVyZS0wMTIzNDU2Nzg5"
	for _, tc := range []struct {
		name   string
		mutate func(*storage.AzureConfig)
	}{
		{"wrong account key", func(c *storage.AzureConfig) { c.AccountKey = wrongKey }},
		{"forged SAS token", func(c *storage.AzureConfig) { c.AccountKey = ""; c.SASToken = "?" + sas }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := srv.AzureConfig()
			tc.mutate(&cfg)
			secrets := []string{cfg.AccountKey, strings.TrimPrefix(cfg.SASToken, "?"), "c2VjcmV0LXNpZ25hdHVyZS0wMTIzNDU2Nzg5", srv.Key}
			st, err := storage.Open(ctx, srv.Location("creds"), storage.Config{Azure: cfg})
			if err != nil {
				t.Fatal(err)
			}
			assertNoSecrets(t, "Location()", st.Location(), secrets...)
			err = st.Put(ctx, "k", []byte("x"))
			if err == nil {
				t.Fatal("Put with bad credentials succeeded")
			}
			if !strings.Contains(err.Error(), "check the Azure credentials") {
				t.Errorf("error does not say what to do: %v", err)
			}
			assertNoSecrets(t, "Put error", err.Error(), secrets...)
			_, err = st.Get(ctx, "k")
			assertNoSecrets(t, "Get error", fmt.Sprint(err), secrets...)
			for _, err := range st.List(ctx, "", "") {
				assertNoSecrets(t, "List error", fmt.Sprint(err), secrets...)
			}
		})
	}
}

// A server may echo request details, including a credential, in its error message; the store must
// not pass that on.
func TestAzure_ErrorsEchoingCredentialsAreRedacted(t *testing.T) {
	const sas = "sv=2023-11-03&sp=rwdl&sig=ZWNob2VkLXNpZ25hdHVyZS12YWx1ZQ%3D%3D"
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-ms-error-code", "InvalidQueryParameterValue")
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="utf-8"?><Error><Code>InvalidQueryParameterValue</Code>`+
			`<Message>bad request %s, signature ZWNob2VkLXNpZ25hdHVyZS12YWx1ZQ==</Message></Error>`, r.URL.RawQuery)
	}))
	t.Cleanup(echo.Close)
	cfg := storage.AzureConfig{SASToken: sas, Endpoint: echo.URL + "/acct", MaxAttempts: 1}
	st, err := storage.Open(ctx, "abfss://c@acct.dfs.core.windows.net/t", storage.Config{Azure: cfg})
	if err != nil {
		t.Fatal(err)
	}
	err = st.Put(ctx, "k", []byte("x"))
	if err == nil || !strings.Contains(err.Error(), "[REDACTED]") {
		t.Fatalf("err = %v, want the echoed credentials redacted", err)
	}
	assertNoSecrets(t, "Put error", err.Error(), sas, "ZWNob2VkLXNpZ25hdHVyZS12YWx1ZQ")
}

// A service-account key whose token exchange is refused by a server echoing the request: the error
// must not carry the key. The token endpoint is a local server, named by the key's token_uri, so no
// request leaves the machine.
func TestGCS_ServiceAccountKeyNeverAppearsInErrors(t *testing.T) {
	var keyPEM, keyID string
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":"invalid_grant","error_description":"key %s rejected: %s"}`, keyID, strings.ReplaceAll(keyPEM, "\n", `\n`))
	}))
	t.Cleanup(echo.Close)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM = string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: must(x509.MarshalPKCS8PrivateKey(rsaKey))}))
	keyID = "0123456789abcdef0123456789abcdef01234567"
	keyJSON, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "p", "private_key_id": keyID, "private_key": keyPEM,
		"client_email": "dk@p.iam.gserviceaccount.com", "client_id": "1", "token_uri": echo.URL + "/token",
	})
	cfg := storage.GCSConfig{CredentialsJSON: keyJSON, MaxAttempts: 1}
	secretLine := strings.Split(keyPEM, "\n")[3]
	for _, text := range []string{fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprintf("%v", storage.Config{GCS: cfg})} {
		assertNoSecrets(t, "printed config", text, keyID, secretLine)
	}
	st, err := storage.Open(ctx, "gs://bucket/t", storage.Config{GCS: cfg})
	if err != nil {
		assertNoSecrets(t, "Open error", err.Error(), keyID, secretLine)
		t.Fatalf("Open with a well-formed key: %v", err)
	}
	_, err = st.Get(ctx, "k")
	if err == nil {
		t.Fatal("Get with a refused key succeeded")
	}
	if !strings.Contains(err.Error(), "invalid_grant") {
		t.Errorf("error does not carry the token server's answer (was the echo server reached?): %v", err)
	}
	assertNoSecrets(t, "Get error", err.Error(), keyID, secretLine)
}

func TestCloudConfigs_PrintWithoutSecrets(t *testing.T) {
	az := storage.AzureConfig{Account: "acct", AccountKey: "print-account-key", SASToken: "sv=1&sig=print-sas-signature"}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("opening", "azure", az, "config", storage.Config{Azure: az})
	for _, text := range []string{
		fmt.Sprintf("%v", az), fmt.Sprintf("%+v", az), fmt.Sprintf("%#v", az), fmt.Sprint(az),
		fmt.Sprintf("%+v", storage.Config{Azure: az}), logged.String(),
	} {
		assertNoSecrets(t, "printed config", text, az.AccountKey, az.SASToken, "print-sas-signature")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
