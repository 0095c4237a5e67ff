// Package own lists hypershift's own components: those implemented in this
// module rather than compiled in from Kubernetes. Each lives in one package
// that owns its configuration (a Config with defaults), the flags its spec
// carries (Config.Args) and the parser and runner of `hypershift component
// NAME`; main puts this list into the binary's one component registry, next
// to the compiled-in components (docs/components.md).
package own

import (
	"hypershift.dev/internal/components"
	"hypershift.dev/internal/endpointproxy"
	"hypershift.dev/internal/nodes/simulated"
	"hypershift.dev/internal/releaseserver"
	"hypershift.dev/internal/workloadidentity"
)

// Components returns the registrations of hypershift's own components.
func Components() components.Registry {
	return components.Registry{
		components.Own(endpointproxy.Name, endpointproxy.Parse, endpointproxy.Run),
		components.Own(simulated.Component, simulated.ParseAgentArgs, simulated.RunAgent),
		components.Own(releaseserver.Name, releaseserver.Parse, releaseserver.Run),
		components.Own(workloadidentity.Name, workloadidentity.Parse, workloadidentity.Run),
	}
}
