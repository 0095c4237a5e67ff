package lbmirror

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/rest"

	"hypershift.dev/internal/controller/guestpass"
)

// Limits bound what one pass reads of a hosted cluster, whose admin
// decides how many Services and EndpointSlices it holds and how large
// they are.
type Limits struct {
	// PageSize is how many objects one list request asks for.
	PageSize int
	// MaxBytes bounds the bytes of every list response of one pass,
	// Services and EndpointSlices together.
	MaxBytes int64
	// MaxServices bounds the LoadBalancer Services mirrored of one
	// cluster.
	MaxServices int
}

// DefaultLimits are pages of 100 objects, 8 MiB a pass and 100 load
// balancers.
var DefaultLimits = Limits{PageSize: 100, MaxBytes: 8 << 20, MaxServices: 100}

// guestService is what the mirror needs of a guest Service; the rest of
// the object is not kept.
type guestService struct {
	Namespace, Name string
	UID             string
	ResourceVersion string
	Deleting        bool
	LoadBalancer    bool
	Finalizers      []string
	Local           bool // externalTrafficPolicy: Local
	Ports           []corev1.ServicePort
	SourceRanges    []string
	Ingress         []corev1.LoadBalancerIngress
}

// finalized reports whether g carries CleanupFinalizer.
func (g guestService) finalized() bool { return slices.Contains(g.Finalizers, CleanupFinalizer) }

// scanServices reads the hosted cluster's Services and returns the
// LoadBalancer ones and those still carrying the cleanup finalizer, by
// namespace and name. A scan cut short by the limits returns what it read
// with an error wrapping guestpass.ErrTruncated.
func scanServices(ctx context.Context, rc rest.Interface, l Limits, b *guestpass.Budget) ([]guestService, error) {
	var out []guestService
	lbs := 0
	err := guestpass.ListPages(ctx, rc, "/api/v1/services", nil, l.PageSize, b, func(raw json.RawMessage) error {
		var s corev1.Service
		if err := json.Unmarshal(raw, &s); err != nil {
			return fmt.Errorf("a Service: %w", err)
		}
		g := guestService{
			Namespace: s.Namespace, Name: s.Name, UID: string(s.UID), ResourceVersion: s.ResourceVersion,
			Deleting: s.DeletionTimestamp != nil,
			// A Service of a load-balancer class is another
			// implementation's, as with any cloud provider's.
			LoadBalancer: s.Spec.Type == corev1.ServiceTypeLoadBalancer && s.Spec.LoadBalancerClass == nil,
			Local:        s.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal,
		}
		g.Finalizers = s.Finalizers
		if !g.LoadBalancer && !g.finalized() {
			return nil
		}
		if g.LoadBalancer {
			if lbs++; lbs > l.MaxServices {
				return fmt.Errorf("more than %d LoadBalancer Services: %w", l.MaxServices, guestpass.ErrTruncated)
			}
		}
		g.Ports, g.SourceRanges, g.Ingress = s.Spec.Ports, s.Spec.LoadBalancerSourceRanges, s.Status.LoadBalancer.Ingress
		out = append(out, g)
		return nil
	})
	return out, err
}

// readyNodes is the set of node names with a ready endpoint of the guest
// Service, read from its EndpointSlices: where an externalTrafficPolicy
// Local Service is served.
func readyNodes(ctx context.Context, rc rest.Interface, s guestService, l Limits, b *guestpass.Budget) (map[string]bool, error) {
	nodes := map[string]bool{}
	err := guestpass.ListPages(ctx, rc, "/apis/discovery.k8s.io/v1/namespaces/"+s.Namespace+"/endpointslices",
		map[string]string{"labelSelector": discoveryv1.LabelServiceName + "=" + s.Name}, l.PageSize, b, func(raw json.RawMessage) error {
			var es discoveryv1.EndpointSlice
			if err := json.Unmarshal(raw, &es); err != nil {
				return fmt.Errorf("an EndpointSlice: %w", err)
			}
			for _, e := range es.Endpoints {
				if e.NodeName != nil && (e.Conditions.Ready == nil || *e.Conditions.Ready) {
					nodes[*e.NodeName] = true
				}
			}
			return nil
		})
	return nodes, err
}
