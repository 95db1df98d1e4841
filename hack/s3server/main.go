// Command s3server is rclone's "serve s3" with only the local backend linked in: an S3-compatible
// server over a plain directory, used by the storage tests and e2e runs. Linking only what we need
// keeps the cold build around 30 s instead of rclone's full multi-minute build, and objects stay plain
// files under the served directory so tests can inspect them on disk.
//
// Usage is rclone's: s3server serve s3 --addr 127.0.0.1:PORT --auth-key AK,SK /data/dir
package main

import (
	_ "github.com/rclone/rclone/backend/local"
	"github.com/rclone/rclone/cmd"
	_ "github.com/rclone/rclone/cmd/serve/s3"
)

func main() {
	cmd.Main()
}
