package storage_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/internal/testutil/s3server"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// testCA is a private certificate authority made up for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// serverCert issues a certificate for 127.0.0.1 and localhost.
func (ca *testCA) serverCert(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "s3.test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func (ca *testCA) writeFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(p, ca.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestS3_CustomCABundleIsNeededAndSufficientForPrivateTLS(t *testing.T) {
	srv := s3server.Start(t)
	ca := newTestCA(t, "deltakeeper test CA")
	front := newUnstartedProxy(t, srv, nil)
	front.TLS = &tls.Config{Certificates: []tls.Certificate{ca.serverCert(t)}}
	front.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are the point here
	front.StartTLS()
	notAFile := filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(notAFile, []byte("no certificates here\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name       string
		caFile     string
		wantOpen   string // substring of the Open error, "" if Open succeeds
		wantAccess string // substring of the Put error, "" if Put succeeds
	}{
		{"trusted with the CA bundle", ca.writeFile(t), "", ""},
		{"untrusted without a CA bundle", "", "", "TLS certificate is not trusted"},
		{"untrusted with another CA's bundle", newTestCA(t, "other CA").writeFile(t), "", "TLS certificate is not trusted"},
		{"bundle without certificates is refused at open", notAFile, "holds no PEM certificates", ""},
		{"missing bundle file is refused at open", filepath.Join(t.TempDir(), "missing.pem"), "reading S3 CA bundle", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := srv.S3Config()
			cfg.Endpoint = front.URL
			cfg.CABundleFile = tc.caFile
			cfg.MaxAttempts = 2
			st, err := storage.Open(ctx, srv.Location("tls"), storage.Config{S3: cfg})
			if tc.wantOpen != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantOpen) {
					t.Fatalf("Open: err = %v, want one mentioning %q", err, tc.wantOpen)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			err = st.Put(ctx, "k", []byte("over TLS"))
			if tc.wantAccess != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantAccess) || !strings.Contains(err.Error(), "CA bundle") {
					t.Fatalf("Put: err = %v, want one mentioning %q and the CA bundle", err, tc.wantAccess)
				}
				return
			}
			if err != nil {
				t.Fatalf("Put over TLS: %v", err)
			}
			if got := mustGet(t, st, "k"); string(got) != "over TLS" {
				t.Fatalf("Get = %q", got)
			}
		})
	}
}
