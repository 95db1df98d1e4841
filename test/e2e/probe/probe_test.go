package main

import (
	"context"
	"io"
	"testing"

	"github.com/deltakeeper/deltakeeper/internal/testutil/s3server"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// The e2e test trusts this probe to tell "pods cannot reach S3" apart from "the probe signs wrongly": check the
// signing against the same S3 server on loopback, without a cluster.
func TestS3Get_ReadsAnObjectWithASignedRequest(t *testing.T) {
	srv := s3server.Start(t)
	ctx := context.Background()
	st, err := storage.Open(ctx, srv.Location(""), storage.Config{S3: srv.S3Config()})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(ctx, "e2e/marker with space.txt", []byte("hello from the host")); err != nil {
		t.Fatal(err)
	}
	creds := credentials{accessKeyID: srv.AccessKeyID, secretAccessKey: srv.SecretAccessKey, region: s3server.Region}
	body, err := s3Get(ctx, srv.Endpoint, srv.Bucket, "e2e/marker with space.txt", creds, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if string(body) != "hello from the host" {
		t.Fatalf("body = %q", body)
	}
}

func TestS3Get_FailsWithWrongKeys(t *testing.T) {
	srv := s3server.Start(t)
	creds := credentials{accessKeyID: srv.AccessKeyID, secretAccessKey: "wrong", region: s3server.Region}
	if _, err := s3Get(context.Background(), srv.Endpoint, srv.Bucket, "missing", creds, io.Discard); err == nil {
		t.Fatal("a request signed with the wrong secret succeeded")
	}
}
