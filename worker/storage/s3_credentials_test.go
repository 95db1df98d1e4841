package storage_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/internal/testutil/s3server"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// assertNoSecrets fails if text contains any of secrets.
func assertNoSecrets(t *testing.T, what, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && strings.Contains(text, s) {
			t.Errorf("%s contains a credential (%q): %s", what, s, text)
		}
	}
}

func TestS3_CredentialsNeverAppearInErrorsOrLocation(t *testing.T) {
	srv := s3server.Start(t)
	const wrongSecret = "wrong-secret-0123456789abcdef"
	const token = "session-token-0123456789abcdef"
	for _, tc := range []struct {
		name   string
		mutate func(*storage.S3Config)
	}{
		{"wrong secret", func(c *storage.S3Config) { c.SecretAccessKey = wrongSecret }},
		{"unknown access key", func(c *storage.S3Config) { c.AccessKeyID = "AKIAUNKNOWNKEY12345" }},
		{"session token", func(c *storage.S3Config) { c.SecretAccessKey = wrongSecret; c.SessionToken = token }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := srv.S3Config()
			tc.mutate(&cfg)
			secrets := []string{cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken, srv.SecretAccessKey}
			st := openS3(t, srv, cfg, "creds")
			assertNoSecrets(t, "Location()", st.Location(), secrets...)

			err := st.Put(ctx, "k", []byte("x"))
			if err == nil {
				t.Fatal("Put with bad credentials succeeded")
			}
			if !strings.Contains(err.Error(), "check the S3 credentials") {
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
func TestS3_ErrorsEchoingCredentialsAreRedacted(t *testing.T) {
	cfg := storage.S3Config{AccessKeyID: "AKIAECHOTEST", SecretAccessKey: "echoed-secret-value", UsePathStyle: true, MaxAttempts: 1}
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeS3Error(w, http.StatusBadRequest, "InvalidArgument",
			"bad request from "+cfg.AccessKeyID+" signed with "+cfg.SecretAccessKey)
	}))
	t.Cleanup(echo.Close)
	cfg.Endpoint = echo.URL
	st, err := storage.Open(ctx, "s3://bucket/t", storage.Config{S3: cfg})
	if err != nil {
		t.Fatal(err)
	}
	err = st.Put(ctx, "k", []byte("x"))
	if err == nil || !strings.Contains(err.Error(), "[REDACTED]") {
		t.Fatalf("err = %v, want the echoed credentials redacted", err)
	}
	assertNoSecrets(t, "Put error", err.Error(), cfg.AccessKeyID, cfg.SecretAccessKey)
}

func TestS3Config_PrintsWithoutSecrets(t *testing.T) {
	cfg := storage.S3Config{
		Endpoint: "https://s3.example", AccessKeyID: "AKIAPRINTTEST", SecretAccessKey: "print-secret", SessionToken: "print-token",
	}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("opening", "cfg", cfg, "config", storage.Config{S3: cfg})
	for _, text := range []string{
		fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprint(cfg),
		fmt.Sprintf("%v", storage.Config{S3: cfg}), fmt.Sprintf("%+v", storage.Config{S3: cfg}),
		logged.String(),
	} {
		assertNoSecrets(t, "printed config", text, cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken)
	}
}

func TestS3Config_EndpointWithUserInfoIsRefusedWithoutEchoingIt(t *testing.T) {
	cfg := storage.S3Config{Endpoint: "https://user:pa55word@s3.example"}
	_, err := storage.Open(ctx, "s3://b/t", storage.Config{S3: cfg})
	if err == nil || !strings.Contains(err.Error(), "must not contain user info") {
		t.Fatalf("err = %v, want a refusal", err)
	}
	assertNoSecrets(t, "error", err.Error(), "pa55word")
}
