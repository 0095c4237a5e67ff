// Package cloudmeta learns, on a machine an infrastructure provider made,
// the name and provider ID its Node must have: what the provider reports
// for the machine, so that Cluster API matches the Machine to the Node and
// the pool admits it. AWS and Azure answer through their instance metadata
// services, KubeVirt through the host name cloud-init set. Everything a
// metadata service returns is bounded and checked before it is used.
package cloudmeta

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Source names where a machine's identity comes from: the value of
// `hypershift join --provider-id-from`.
type Source string

// The sources, one per infrastructure provider.
const (
	// AWS reads EC2 instance metadata (IMDSv2): the provider ID
	// aws:///ZONE/INSTANCE-ID that cluster-api-provider-aws writes, and
	// the instance's private DNS name.
	AWS Source = "aws"
	// Azure reads the Azure Instance Metadata Service: the provider ID
	// azure://RESOURCE-ID that cluster-api-provider-azure writes, and the
	// virtual machine's name, lower case.
	Azure Source = "azure"
	// KubeVirt reads the host name, which cloud-init set to the name of
	// the VirtualMachine (cluster-api-provider-kubevirt names it after the
	// KubevirtMachine): the provider ID kubevirt://NAME, and the name.
	KubeVirt Source = "kubevirt"
)

// Sources are the sources in the order help texts list them.
var Sources = []Source{AWS, Azure, KubeVirt}

// ParseSource is the Source s names; flag names the option in errors.
func ParseSource(flag, s string) (Source, error) {
	for _, src := range Sources {
		if string(src) == s {
			return src, nil
		}
	}
	return "", fmt.Errorf("%s %q: want one of aws, azure, kubevirt", flag, s)
}

// DefaultEndpoint is where AWS and Azure serve instance metadata, on
// every machine.
const DefaultEndpoint = "http://169.254.169.254"

// The bounds of a lookup.
const (
	// DefaultRequestTimeout bounds one request to a metadata service.
	DefaultRequestTimeout = 2 * time.Second
	// DefaultDeadline bounds a whole lookup, retries included: a metadata
	// service may not answer in the first seconds of a boot.
	DefaultDeadline = 30 * time.Second
	// DefaultRetryWait is the first wait before a retry; it doubles up to
	// maxRetryWait.
	DefaultRetryWait = 500 * time.Millisecond
	maxRetryWait     = 4 * time.Second
	// MaxResponse bounds what is read of one answer.
	MaxResponse = 64 << 10
)

// Identity is what the machine's provider calls the machine: the Node's
// name and spec.providerID.
type Identity struct {
	NodeName   string
	ProviderID string
}

// Client looks identities up. The zero value reads the real metadata
// endpoint with the default bounds.
type Client struct {
	// Endpoint is the metadata services' base URL; empty:
	// DefaultEndpoint. Tests point it at a fake.
	Endpoint string
	// RequestTimeout, Deadline and RetryWait: zero takes the defaults.
	RequestTimeout, Deadline, RetryWait time.Duration
	// Hostname returns the host name; nil: os.Hostname.
	Hostname func() (string, error)
}

// Lookup learns the machine's identity from src, within the client's
// deadline.
func (c Client) Lookup(ctx context.Context, src Source) (Identity, error) {
	ctx, cancel := context.WithTimeout(ctx, orDefault(c.Deadline, DefaultDeadline))
	defer cancel()
	switch src {
	case AWS:
		f, err := c.fetcher("EC2 instance metadata")
		if err != nil {
			return Identity{}, err
		}
		return lookupAWS(ctx, f)
	case Azure:
		f, err := c.fetcher("Azure instance metadata")
		if err != nil {
			return Identity{}, err
		}
		return lookupAzure(ctx, f)
	case KubeVirt:
		hostname := c.Hostname
		if hostname == nil {
			hostname = os.Hostname
		}
		return lookupKubeVirt(hostname)
	}
	return Identity{}, fmt.Errorf("no identity source %q: want one of aws, azure, kubevirt", src)
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// checkHostname refuses a name that is not a DNS-1123 subdomain (lower
// case, at most 253 characters): what a Node's name must be.
func checkHostname(source, what, name string) error {
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return fmt.Errorf("%s: the %s %s is not a Node name: %s", source, what, quote(name), strings.Join(msgs, "; "))
	}
	return nil
}

// quote quotes a value for an error, cut to a readable length: a value a
// metadata service returned may be anything.
func quote(v string) string {
	const maxShown = 96
	if len(v) > maxShown {
		return fmt.Sprintf("%q… (%d bytes)", v[:maxShown], len(v))
	}
	return fmt.Sprintf("%q", v)
}
