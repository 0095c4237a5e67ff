package bootstrap

import (
	"fmt"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The releases information of a hosted cluster of platform None: a
// ConfigMap in kube-public, readable by bootstrap tokens and nodes, naming
// the control plane's release server and the sha256 of every release it
// serves. A node reads it over the API connection it trusts (CA pinned at
// join) and refuses a download whose sha256 differs.
const (
	ReleasesInfoNamespace = metav1.NamespacePublic
	ReleasesInfoName      = "hypershift-releases"
	// ReleasesInfoURL is the release server's base URL.
	ReleasesInfoURL = "url"
	// ReleasesInfoSHA256Prefix + version is the hex sha256 of the
	// version's `kubernetes` binary.
	ReleasesInfoSHA256Prefix = "sha256."
)

var hexSHA256 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ReleasesInfo is what the releases ConfigMap says.
type ReleasesInfo struct {
	URL    string
	SHA256 map[string]string // version → hex sha256
}

// ParseReleasesInfo reads the releases ConfigMap's data.
func ParseReleasesInfo(data map[string]string) (ReleasesInfo, error) {
	info := ReleasesInfo{URL: data[ReleasesInfoURL], SHA256: map[string]string{}}
	if !strings.HasPrefix(info.URL, "https://") {
		return info, fmt.Errorf("%s/%s: %s %q is not an https URL", ReleasesInfoNamespace, ReleasesInfoName, ReleasesInfoURL, info.URL)
	}
	for k, v := range data {
		version, ok := strings.CutPrefix(k, ReleasesInfoSHA256Prefix)
		if !ok {
			continue
		}
		if !hexSHA256.MatchString(v) {
			return info, fmt.Errorf("%s/%s: %s is not a hex sha256", ReleasesInfoNamespace, ReleasesInfoName, k)
		}
		info.SHA256[version] = v
	}
	return info, nil
}

// Data renders the ConfigMap's data.
func (i ReleasesInfo) Data() map[string]string {
	out := map[string]string{ReleasesInfoURL: i.URL}
	for v, sum := range i.SHA256 {
		out[ReleasesInfoSHA256Prefix+v] = sum
	}
	return out
}
