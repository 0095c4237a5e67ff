// Command hypershift runs hosted Kubernetes control planes.
package main

import (
	"os"

	"hypershift.dev/internal/cli"
	"hypershift.dev/internal/components/coredns"
	"hypershift.dev/internal/components/embedded"
	"hypershift.dev/internal/components/own"
)

func main() {
	// The one table of what `hypershift component NAME` runs: the upstream
	// components, compiled in here only (embedded is the one package that
	// links k8s.io/kubernetes), and hypershift's own.
	os.Exit(cli.Execute(append(append(embedded.Components(), own.Components()...),
		coredns.Component,
	)))
}
