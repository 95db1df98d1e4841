// Command probe is a throwaway program the e2e tests run in a pod (packed by hack/imagetar, like the real
// image) to show that pods reach the S3 test server on the host: it dials the endpoint over TCP and then
// fetches one object with a SigV4-signed GET, using only the standard library.
//
//	probe s3-get -endpoint http://10.77.0.1:PORT -bucket B -key K
//
// Credentials and region come from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION, as for the worker.
// It prints the object's content and exits 0, or says which step failed and exits 1.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "s3-get" {
		fmt.Fprintln(os.Stderr, "usage: probe s3-get -endpoint URL -bucket BUCKET -key KEY")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("s3-get", flag.ExitOnError)
	endpoint := fs.String("endpoint", "", "S3 endpoint, http://host:port")
	bucket := fs.String("bucket", "", "bucket")
	key := fs.String("key", "", "object key")
	_ = fs.Parse(os.Args[2:])
	creds := credentials{
		accessKeyID:     os.Getenv("AWS_ACCESS_KEY_ID"),
		secretAccessKey: os.Getenv("AWS_SECRET_ACCESS_KEY"),
		region:          os.Getenv("AWS_REGION"),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	body, err := s3Get(ctx, *endpoint, *bucket, *key, creds, os.Stdout)
	cancel() // before os.Exit, which runs no deferred calls
	if err != nil {
		fmt.Println("probe: FAIL:", err)
		os.Exit(1)
	}
	fmt.Printf("probe: object content: %s\n", body)
}

// s3Get dials the endpoint, then GETs bucket/key path-style with a signed request, logging each step to log.
func s3Get(ctx context.Context, endpoint, bucket, key string, creds credentials, log io.Writer) ([]byte, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" || bucket == "" || key == "" {
		return nil, fmt.Errorf("need -endpoint http://host:port, -bucket and -key (endpoint %q)", endpoint)
	}
	if creds.accessKeyID == "" || creds.secretAccessKey == "" || creds.region == "" {
		return nil, fmt.Errorf("AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION must be set")
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, fmt.Errorf("TCP %s: %w", u.Host, err)
	}
	fmt.Fprintf(log, "probe: TCP %s: connected from %s\n", u.Host, conn.LocalAddr())
	conn.Close()

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/"+url.PathEscape(bucket)+"/"+escapeKey(key), nil)
	if err != nil {
		return nil, err
	}
	sign(req, creds, time.Now())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s: reading the body: %w", req.URL, err)
	}
	fmt.Fprintf(log, "probe: GET %s: %s\n", req.URL, resp.Status)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", req.URL, resp.Status, body)
	}
	return body, nil
}
