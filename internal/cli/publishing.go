package cli

import (
	"context"
	"fmt"
	"io"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// defaultPublishing sets the publishing flags when --api-server-publishing
// is not given to what the management plane implies
// (ClusterSpec.DefaultPublishing) and says so on out.
func (o *createClusterOptions) defaultPublishing(ctx context.Context, c client.Client, out io.Writer) error {
	fix := "give --api-server-publishing NodePort --api-server-address NODE_ADDRESS, or --api-server-publishing LoadBalancer --api-server-address DNS_NAME"
	spec := &ClusterSpec{Publishing: o.publishing, APIServerAddress: o.apiServerAddress}
	choice, err := spec.DefaultPublishing(ctx, c, fix)
	if err != nil || choice == nil {
		return err
	}
	o.publishing, o.apiServerAddress = spec.Publishing, spec.APIServerAddress
	fmt.Fprintf(out, "publishing the API server on a NodePort at node %s's address %s (the management cluster runs control planes as pods); choose with --api-server-publishing and --api-server-address\n", choice.Node, choice.Address)
	return nil
}
