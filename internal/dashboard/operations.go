package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/cli"
	"hypershift.dev/internal/version"
)

// The changes the pages make. Each is the request of the command named in
// its comment (internal/cli, ops.go and changes.go), made with the dashboard's client:
// the management kubeconfig's authority, nothing more. What the API server
// refuses is answered with its status and message as they are.

// ClusterRef names a hosted cluster.
type ClusterRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (r ClusterRef) key() (client.ObjectKey, error) {
	if r.Name == "" {
		return client.ObjectKey{}, refuse(http.StatusBadRequest, "name the hosted cluster: {\"namespace\": …, \"name\": …}")
	}
	if r.Namespace == "" {
		r.Namespace = defaultNamespace
	}
	return client.ObjectKey{Namespace: r.Namespace, Name: r.Name}, nil
}

// defaultNamespace is the CLI's default namespace of hosted clusters.
const defaultNamespace = "clusters"

// CreateRequest is `hypershift create cluster PLATFORM --name NAME
// [--namespace NS] [--node-pool-replicas N] [--availability-policy P]`.
type CreateRequest struct {
	ClusterRef
	Platform           string `json:"platform"`
	NodePoolReplicas   *int32 `json:"nodePoolReplicas,omitempty"`
	AvailabilityPolicy string `json:"availabilityPolicy,omitempty"`
}

// ScaleRequest is `kubectl -n NS scale nodepool NAME --replicas N`.
type ScaleRequest struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Replicas  *int32 `json:"replicas"`
}

// UpgradeRequest is docs/upgrades.md's patch of spec.kubernetesVersion.
type UpgradeRequest struct {
	ClusterRef
	KubernetesVersion string `json:"kubernetesVersion"`
}

// Result is a change's answer: what was done.
type Result struct {
	Message string `json:"message"`
}

// dashboardPlatforms are the platforms a cluster made on the page may have:
// the ones that need nothing but the management plane.
var dashboardPlatforms = map[string]hypershiftv1alpha1.PlatformType{
	"none":      hypershiftv1alpha1.NonePlatform,
	"simulated": hypershiftv1alpha1.SimulatedPlatform,
}

// operations adds the change endpoints to mux.
func (s *Server) operations(mux *http.ServeMux, addr net.Addr) {
	own := origins(addr)
	mux.Handle("POST /api/clusters", operation(s, own, s.createCluster))
	mux.Handle("POST /api/cluster/hibernate", operation(s, own, s.hibernate(true)))
	mux.Handle("POST /api/cluster/resume", operation(s, own, s.hibernate(false)))
	mux.Handle("POST /api/cluster/upgrade", operation(s, own, s.upgrade))
	mux.Handle("POST /api/cluster/rotate-ca", operation(s, own, s.rotateCA))
	mux.Handle("POST /api/nodepool/scale", operation(s, own, s.scale))
}

// operation serves one change: the checks of checkMutation, then do with
// the decoded body; it answers do's Result, or its error with the status
// of statusOf.
func operation[T any](s *Server, own map[string]bool, do func(context.Context, *T) (string, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in := new(T)
		err := checkMutation(own, r)
		if err == nil {
			err = decode(w, r, in)
		}
		var msg string
		if err == nil {
			msg, err = do(r.Context(), in)
		}
		if err != nil {
			status, text := statusOf(err)
			s.log.Info("dashboard change refused", "path", r.URL.Path, "status", status, "message", text)
			w.Header().Set("Cache-Control", "no-store")
			http.Error(w, text, status)
			return
		}
		s.log.Info("dashboard change made", "path", r.URL.Path, "result", msg)
		writeJSON(w, Result{Message: msg})
	})
}

// statusOf is the HTTP status and message of a change's error: the API
// server's own for its refusals (403, 404, 409, 422, …), the dashboard's
// for a request it refused, 502 when the management API was not reached,
// and 409 for the commands' own checks of the cluster's state (a rotation
// already running, a name already taken).
func statusOf(err error) (int, string) {
	var req *requestError
	if errors.As(err, &req) {
		return req.status, req.msg
	}
	var api apierrors.APIStatus
	if errors.As(err, &api) {
		st := api.Status()
		if st.Code == 0 {
			return http.StatusBadGateway, err.Error()
		}
		return int(st.Code), err.Error()
	}
	var netErr net.Error
	var urlErr *url.Error
	if errors.As(err, &netErr) || errors.As(err, &urlErr) {
		return http.StatusBadGateway, "the management API: " + err.Error()
	}
	return http.StatusConflict, err.Error()
}

// createCluster is `hypershift create cluster` without --wait.
func (s *Server) createCluster(ctx context.Context, in *CreateRequest) (string, error) {
	platform, ok := dashboardPlatforms[in.Platform]
	if !ok {
		return "", refuse(http.StatusBadRequest, "platform %q: the dashboard creates none or simulated clusters", in.Platform)
	}
	if in.Namespace == "" {
		in.Namespace = defaultNamespace
	}
	spec := &cli.ClusterSpec{
		Namespace: in.Namespace, Name: in.Name, Platform: platform,
		KubernetesVersion:  version.KubernetesVersion,
		ServiceCIDR:        hypershiftv1alpha1.DefaultServiceCIDR,
		ClusterCIDR:        hypershiftv1alpha1.DefaultClusterCIDR,
		AvailabilityPolicy: string(hypershiftv1alpha1.SingleReplica),
		Publishing:         string(hypershiftv1alpha1.HostPort),
		NodePoolReplicas:   in.NodePoolReplicas,
	}
	if in.AvailabilityPolicy != "" {
		spec.AvailabilityPolicy = in.AvailabilityPolicy
	}
	if err := spec.Validate(); err != nil {
		return "", refuse(http.StatusUnprocessableEntity, "%s", err.Error())
	}
	// As the command without --api-server-publishing: what the management
	// plane implies (a NodePort on the kube runtime).
	if _, err := spec.DefaultPublishing(ctx, s.client, "create it with `hypershift create cluster` and --api-server-publishing"); err != nil {
		return "", err
	}
	var made []string
	_, _, err := cli.CreateCluster(ctx, s.client, spec, func(obj client.Object) {
		kind := "hostedcluster"
		if _, ok := obj.(*hypershiftv1alpha1.NodePool); ok {
			kind = "nodepool"
		}
		made = append(made, fmt.Sprintf("%s %s/%s created", kind, obj.GetNamespace(), obj.GetName()))
	})
	if err != nil {
		if len(made) > 0 {
			return "", fmt.Errorf("%s; then: %w", strings.Join(made, "; "), err)
		}
		return "", err
	}
	return strings.Join(made, "; "), nil
}

// hibernate is `hypershift hibernate cluster` (enabled) or `hypershift
// resume cluster`.
func (s *Server) hibernate(enabled bool) func(context.Context, *ClusterRef) (string, error) {
	return func(ctx context.Context, in *ClusterRef) (string, error) {
		key, err := in.key()
		if err != nil {
			return "", err
		}
		if _, err := cli.SetHibernation(ctx, s.client, key, enabled); err != nil {
			return "", err
		}
		return fmt.Sprintf("hosted cluster %s: spec.hibernation.enabled=%t", key, enabled), nil
	}
}

// upgrade is docs/upgrades.md's patch of spec.kubernetesVersion.
func (s *Server) upgrade(ctx context.Context, in *UpgradeRequest) (string, error) {
	key, err := in.key()
	if err != nil {
		return "", err
	}
	if in.KubernetesVersion == "" {
		return "", refuse(http.StatusBadRequest, "give the version to upgrade to, such as %s", version.KubernetesVersion)
	}
	if _, err := cli.SetKubernetesVersion(ctx, s.client, key, in.KubernetesVersion); err != nil {
		return "", err
	}
	return fmt.Sprintf("hosted cluster %s: spec.kubernetesVersion=%s", key, in.KubernetesVersion), nil
}

// rotateCA is `hypershift rotate ca` without --token.
func (s *Server) rotateCA(ctx context.Context, in *ClusterRef) (string, error) {
	key, err := in.key()
	if err != nil {
		return "", err
	}
	token, err := cli.RotateCA(ctx, s.client, key, "")
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("hosted cluster %s: spec.certificates.rotateCA=%s", key, token), nil
}

// scale is `kubectl scale nodepool`.
func (s *Server) scale(ctx context.Context, in *ScaleRequest) (string, error) {
	if in.Name == "" {
		return "", refuse(http.StatusBadRequest, "name the NodePool: {\"namespace\": …, \"name\": …, \"replicas\": N}")
	}
	key := client.ObjectKey{Namespace: in.Namespace, Name: in.Name}
	if key.Namespace == "" {
		key.Namespace = defaultNamespace
	}
	if in.Replicas == nil {
		return "", refuse(http.StatusBadRequest, "give the number of nodes: {\"replicas\": N}")
	}
	if err := cli.ScaleNodePool(ctx, s.client, key, *in.Replicas); err != nil {
		return "", err
	}
	return fmt.Sprintf("nodepool %s scaled to %d", key, *in.Replicas), nil
}
