package cloudmeta

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
)

// EC2 instance metadata, IMDSv2: a session token first (PUT), then each
// value with it.
//
//nolint:gosec // the token's path and header names, not credentials
const (
	awsTokenPath      = "/latest/api/token"
	awsTokenTTLHeader = "X-Aws-Ec2-Metadata-Token-Ttl-Seconds"
	awsTokenHeader    = "X-Aws-Ec2-Metadata-Token"
	awsTokenTTL       = 60 // seconds: a lookup ends within DefaultDeadline
	maxAWSToken       = 256
)

const (
	awsInstanceIDPath    = "/latest/meta-data/instance-id"
	awsZonePath          = "/latest/meta-data/placement/availability-zone"
	awsLocalHostnamePath = "/latest/meta-data/local-hostname"
)

var (
	awsInstanceID = regexp.MustCompile(`^i-[0-9a-f]{8,17}$`)
	// An availability zone (us-east-1a, us-gov-west-1a), Local Zone
	// (us-west-2-lax-1a) or Wavelength Zone (us-east-1-wl1-bos-wlz-1):
	// lower-case words and numbers after the country, not a region's
	// name alone.
	awsZone     = regexp.MustCompile(`^[a-z]{2}(-[a-z0-9]+){2,6}$`)
	awsRegion   = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)
	awsTokenVal = regexp.MustCompile(`^[A-Za-z0-9+/=_-]+$`)
)

// lookupAWS: provider ID aws:///ZONE/INSTANCE-ID, as
// cluster-api-provider-aws writes it, and the instance's private DNS name
// (local-hostname), which it reports as the Machine's InternalDNS address.
func lookupAWS(ctx context.Context, f *fetcher) (Identity, error) {
	token, err := f.do(ctx, http.MethodPut, awsTokenPath, http.Header{awsTokenTTLHeader: {strconv.Itoa(awsTokenTTL)}})
	if err != nil {
		return Identity{}, fmt.Errorf("%w (IMDSv2 session token)", err)
	}
	if len(token) > maxAWSToken || !awsTokenVal.Match(token) {
		return Identity{}, fmt.Errorf("%s %s: the session token is not one (%d bytes)", f.source, awsTokenPath, len(token))
	}
	get := func(path string) (string, error) {
		b, err := f.do(ctx, http.MethodGet, path, http.Header{awsTokenHeader: {string(token)}})
		return string(b), err
	}
	id, err := get(awsInstanceIDPath)
	if err != nil {
		return Identity{}, err
	}
	if !awsInstanceID.MatchString(id) {
		return Identity{}, fmt.Errorf("%s %s: %s is not an instance ID (i-HEX)", f.source, awsInstanceIDPath, quote(id))
	}
	zone, err := get(awsZonePath)
	if err != nil {
		return Identity{}, err
	}
	if !isAWSZone(zone) {
		return Identity{}, fmt.Errorf("%s %s: %s is not an availability zone of a region (like us-east-1a)", f.source, awsZonePath, quote(zone))
	}
	host, err := get(awsLocalHostnamePath)
	if err != nil {
		return Identity{}, err
	}
	if err := checkHostname(f.source+" "+awsLocalHostnamePath, "local hostname", host); err != nil {
		return Identity{}, err
	}
	return Identity{NodeName: host, ProviderID: "aws:///" + zone + "/" + id}, nil
}

// isAWSZone says whether zone names a zone (not a region alone).
func isAWSZone(zone string) bool {
	return len(zone) <= 64 && awsZone.MatchString(zone) && !awsRegion.MatchString(zone)
}
