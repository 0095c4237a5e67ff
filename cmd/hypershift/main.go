// Command hypershift runs hosted Kubernetes control planes.
package main

import (
	"os"

	"hypershift.dev/internal/cli"
	"hypershift.dev/internal/components/coredns"
	"hypershift.dev/internal/components/embedded"
	"hypershift.dev/internal/components/konnectivity"
	"hypershift.dev/internal/components/own"
	"hypershift.dev/internal/entrypoint"
	"hypershift.dev/internal/nodes/csinode"
	"hypershift.dev/internal/nodes/podnet"
)

func main() {
	// The one table of what `hypershift component NAME` runs: the upstream
	// components, compiled in here only (embedded is the one package that
	// links k8s.io/kubernetes), the Konnectivity server and agent, CoreDNS,
	// the nodes' pod network and CSI plugin, and hypershift's own.
	registry := append(embedded.Components(), konnectivity.Components()...)
	registry = append(registry, coredns.Component)
	registry = append(registry, podnet.Components()...)
	registry = append(registry, csinode.Components()...)
	root, management := cli.NewRootCommand()
	entrypoint.Add(root, management, append(registry, own.Components()...))
	os.Exit(cli.Execute(root))
}
