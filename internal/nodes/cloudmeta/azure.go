package cloudmeta

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// Azure Instance Metadata Service: the compute section, asked for with
// the Metadata header (without it the service refuses the request).
const azureComputePath = "/metadata/instance/compute?api-version=2021-02-01"

// A virtual machine's resource ID,
// /subscriptions/S/resourceGroups/G/providers/Microsoft.Compute/virtualMachines/N:
// each part takes only the characters Azure allows in it (a
// subscription is a GUID; resource groups take letters, digits and
// ._()-; a VM name letters, digits and ._-), so the provider ID needs no
// quoting anywhere.
var azureResourceID = regexp.MustCompile(`^/subscriptions/[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}` +
	`/resourceGroups/[A-Za-z0-9._()-]{1,90}/providers/Microsoft\.Compute/virtualMachines/([A-Za-z0-9._-]{1,64})$`)

// lookupAzure: provider ID azure://RESOURCE-ID (so azure:///subscriptions/…),
// as cluster-api-provider-azure writes it, and the VM's name lower case.
func lookupAzure(ctx context.Context, f *fetcher) (Identity, error) {
	body, err := f.do(ctx, http.MethodGet, azureComputePath, http.Header{"Metadata": {"true"}})
	if err != nil {
		return Identity{}, err
	}
	var compute struct {
		ResourceID string `json:"resourceId"`
		Name       string `json:"name"`
	}
	if err := json.Unmarshal(body, &compute); err != nil {
		return Identity{}, fmt.Errorf("%s %s: not the compute metadata: %w", f.source, azureComputePath, err)
	}
	m := azureResourceID.FindStringSubmatch(compute.ResourceID)
	if m == nil {
		return Identity{}, fmt.Errorf("%s %s: resourceId %s is not a virtual machine's (/subscriptions/GUID/resourceGroups/GROUP/providers/Microsoft.Compute/virtualMachines/NAME)", f.source, azureComputePath, quote(compute.ResourceID))
	}
	if !strings.EqualFold(m[1], compute.Name) {
		return Identity{}, fmt.Errorf("%s %s: name %s is not the virtual machine of resourceId %s", f.source, azureComputePath, quote(compute.Name), quote(compute.ResourceID))
	}
	name := strings.ToLower(compute.Name)
	if err := checkHostname(f.source+" "+azureComputePath, "VM name", name); err != nil {
		return Identity{}, err
	}
	return Identity{NodeName: name, ProviderID: "azure://" + compute.ResourceID}, nil
}
