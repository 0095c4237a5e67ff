// Command image writes a one-layer image tarball of a static program, which
// `hypershift node load-image` imports into a node: the demo's app needs no
// registry.
//
//	go run ./hack/demo/image -name NAME:TAG -o FILE.tar PROGRAM
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"hypershift.dev/internal/nodes/join"
)

func main() {
	name := flag.String("name", "", "image name and tag")
	out := flag.String("o", "", "tarball to write")
	flag.Parse()
	if *name == "" || *out == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: image -name NAME:TAG -o FILE.tar PROGRAM")
		os.Exit(2)
	}
	if err := write(*name, *out, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func write(name, out, program string) error {
	prog, err := os.ReadFile(program)
	if err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	base := filepath.Base(program)
	if err := join.WriteImage(f, name, map[string][]byte{base: prog}, []string{"/" + base}); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
