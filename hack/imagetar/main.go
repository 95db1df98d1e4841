// Command imagetar packs static binaries into a single-layer container image and writes it as a
// docker-archive tarball (the format of `docker save`, which `ctr images import` reads). It exists because
// CI machines have no Docker engine and no registry: the e2e cluster imports the tarball straight into
// containerd and pods run it with imagePullPolicy: Never.
//
//	imagetar -o bin/images/x.tar -ref deltakeeper.local/deltakeeper:e2e \
//	    -add bin/deltakeeper:/usr/local/bin/deltakeeper -entrypoint /usr/local/bin/deltakeeper \
//	    -ca /etc/ssl/certs/ca-certificates.crt
//
// The root filesystem is minimal and distroless-like: /etc/passwd and /etc/group with root and nonroot
// (65532), /tmp (1777), /home/nonroot, the added files and optionally a CA bundle. Output is byte-for-byte
// reproducible: fixed mtimes, owners and entry order, so the same inputs always give the same image id.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
)

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "imagetar:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("imagetar", flag.ContinueOnError)
	var spec Spec
	var adds, envs stringList
	out := fs.String("o", "", "output tarball (required)")
	fs.StringVar(&spec.Ref, "ref", "", "image reference recorded in the archive, e.g. deltakeeper.local/deltakeeper:e2e (required)")
	fs.StringVar(&spec.Entrypoint, "entrypoint", "", "absolute path of the entrypoint inside the image (required)")
	fs.StringVar(&spec.User, "user", "65532:65532", "user:group the image runs as")
	fs.StringVar(&spec.CABundle, "ca", "", "host CA bundle to install as /etc/ssl/certs/ca-certificates.crt")
	fs.StringVar(&spec.Arch, "arch", runtime.GOARCH, "image architecture")
	fs.Var(&adds, "add", "SRC:DEST[:MODE] file to add (repeatable); MODE is octal, default: the source's permissions")
	fs.Var(&envs, "env", "KEY=VALUE environment variable of the image (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *out == "" || spec.Ref == "" || spec.Entrypoint == "" {
		return fmt.Errorf("-o, -ref and -entrypoint are required")
	}
	for _, a := range adds {
		f, err := parseAdd(a)
		if err != nil {
			return err
		}
		spec.Files = append(spec.Files, f)
	}
	spec.Env = envs

	tmp := *out + ".tmp"
	w, err := os.Create(tmp)
	if err != nil {
		return err
	}
	id, err := Write(w, spec)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	// Rename last so an interrupted build never leaves a truncated tarball under the final name.
	if err := os.Rename(tmp, *out); err != nil {
		return err
	}
	fmt.Printf("%s %s sha256:%s\n", *out, spec.Ref, id)
	return nil
}
