// Package depspin pins the data-plane modules in go.mod until their components import them.
package depspin

import (
	_ "github.com/coredns/coredns/core/dnsserver"
	_ "github.com/coredns/coredns/coremain"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
	proxyapp "k8s.io/kubernetes/cmd/kube-proxy/app"
	agentapp "sigs.k8s.io/apiserver-network-proxy/cmd/agent/app"
	serverapp "sigs.k8s.io/apiserver-network-proxy/cmd/server/app"
)

var _ = agentapp.NewAgentCommand
var _ = serverapp.NewProxyCommand
var _ = proxyapp.NewProxyCommand
