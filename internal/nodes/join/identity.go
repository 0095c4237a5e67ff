package join

import (
	"context"
	"fmt"
	"io"

	"hypershift.dev/internal/nodes/cloudmeta"
)

// CheckProviderIDFrom refuses an identity source that is not one, and one
// given with a Node name or provider ID: the source says both, as the
// machine's provider reports them.
func CheckProviderIDFrom(opts Options) error {
	if opts.ProviderIDFrom == "" {
		return nil
	}
	if _, err := cloudmeta.ParseSource("--provider-id-from", opts.ProviderIDFrom); err != nil {
		return err
	}
	if opts.NodeName != "" {
		return fmt.Errorf("--provider-id-from %s and --node-name %s both given: the Node's name comes from the machine's provider; pass one", opts.ProviderIDFrom, opts.NodeName)
	}
	if opts.ProviderID != "" {
		return fmt.Errorf("--provider-id-from %s and --provider-id %s (or $HYPERSHIFT_PROVIDER_ID) both given: the provider ID comes from the machine's provider; pass one", opts.ProviderIDFrom, opts.ProviderID)
	}
	return nil
}

// machineIdentity sets the Node's name and provider ID from the machine's
// provider when opts ask for it (--provider-id-from), and says so on
// progress.
func machineIdentity(ctx context.Context, opts *Options, progress io.Writer) error {
	if opts.ProviderIDFrom == "" {
		return nil
	}
	src, err := cloudmeta.ParseSource("--provider-id-from", opts.ProviderIDFrom)
	if err != nil {
		return err
	}
	id, err := opts.Metadata.Lookup(ctx, src)
	if err != nil {
		return fmt.Errorf("--provider-id-from %s: %w", src, err)
	}
	if err := CheckProviderID(id.ProviderID); err != nil {
		return fmt.Errorf("--provider-id-from %s: %w", src, err)
	}
	opts.NodeName, opts.ProviderID = id.NodeName, id.ProviderID
	fmt.Fprintf(progress, "node name %s and provider ID %s, from %s\n", id.NodeName, id.ProviderID, src)
	return nil
}
