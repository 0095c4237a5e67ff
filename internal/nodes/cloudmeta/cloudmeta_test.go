package cloudmeta

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// fast is a client of the fake with short bounds, so that retries and
// deadlines show in milliseconds.
func fast(endpoint string) Client {
	return Client{Endpoint: endpoint, RequestTimeout: 200 * time.Millisecond, Deadline: 2 * time.Second, RetryWait: 10 * time.Millisecond}
}

func TestAWS(t *testing.T) {
	f, url := newFakeIMDS(t)
	id, err := fast(url).Lookup(t.Context(), AWS)
	if err != nil {
		t.Fatal(err)
	}
	want := Identity{NodeName: "ip-10-0-1-23.ec2.internal", ProviderID: "aws:///us-east-1a/i-0123456789abcdef0"}
	if id != want {
		t.Errorf("identity %+v, want %+v", id, want)
	}
	if n := f.count("PUT /latest/api/token"); n != 1 {
		t.Errorf("%d session tokens asked for, want 1", n)
	}
}

// The fake answers as the real services do to a request without their
// headers: it is the fake that the lookups are tested against.
func TestFakeRefusesWhatTheServicesRefuse(t *testing.T) {
	_, url := newFakeIMDS(t)
	for _, tc := range []struct {
		method, path string
		header       http.Header
		want         int
	}{
		{http.MethodGet, "/latest/meta-data/instance-id", nil, http.StatusUnauthorized},
		{http.MethodGet, "/latest/meta-data/instance-id", http.Header{"X-Aws-Ec2-Metadata-Token": {"forged"}}, http.StatusUnauthorized},
		{http.MethodPut, "/latest/api/token", nil, http.StatusBadRequest},
		{http.MethodPut, "/latest/api/token", http.Header{"X-Aws-Ec2-Metadata-Token-Ttl-Seconds": {"60"}, "X-Forwarded-For": {"10.0.0.1"}}, http.StatusForbidden},
		{http.MethodGet, "/metadata/instance/compute?api-version=2021-02-01", nil, http.StatusBadRequest},
		{http.MethodGet, "/metadata/instance/compute", http.Header{"Metadata": {"true"}}, http.StatusBadRequest},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), tc.method, url+tc.path, http.NoBody)
		for k, v := range tc.header {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s %v: HTTP %d, want %d", tc.method, tc.path, tc.header, resp.StatusCode, tc.want)
		}
	}
}

// A value that is not what the service documents is refused, named with
// where it came from; nothing of it reaches a Node.
func TestAWSRefusesWhatIsNotAnIdentity(t *testing.T) {
	for _, tc := range []struct {
		key, value, want string
	}{
		{"instance-id", "i-0123; rm -rf /", `instance-id: "i-0123; rm -rf /" is not an instance ID`},
		{"instance-id", "i-0123456789ABCDEF0", "is not an instance ID"},
		{"instance-id", "i-0123456789abcdef0\n", "is not an instance ID"},
		{"instance-id", "", "is not an instance ID"},
		{"placement/availability-zone", "us-east-1", `availability-zone: "us-east-1" is not an availability zone`},
		{"placement/availability-zone", "../../x", "is not an availability zone"},
		{"placement/availability-zone", "us-east-1a b", "is not an availability zone"},
		{"placement/availability-zone", "us-east-1a/i-0", "is not an availability zone"},
		{"local-hostname", "IP-10-0-1-23.ec2.internal", `local-hostname: the local hostname "IP-10-0-1-23.ec2.internal" is not a Node name`},
		{"local-hostname", "ip-10-0-1-23.ec2.internal ip-10-0-1-23.example.com", "is not a Node name"},
		{"local-hostname", "a\"b", "is not a Node name"},
		{"local-hostname", strings.Repeat("a", 254), "(254 bytes)"},
	} {
		f, url := newFakeIMDS(t)
		f.aws[tc.key] = tc.value
		_, err := fast(url).Lookup(t.Context(), AWS)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "EC2 instance metadata") {
			t.Errorf("%s %q: %v, want an error with %q", tc.key, tc.value, err, tc.want)
		}
	}
}

func TestAnswersAreBounded(t *testing.T) {
	f, url := newFakeIMDS(t)
	f.aws["local-hostname"] = strings.Repeat("a", MaxResponse+1)
	if _, err := fast(url).Lookup(t.Context(), AWS); err == nil || !strings.Contains(err.Error(), "larger than 65536 bytes") {
		t.Errorf("aws: %v, want the answer refused for its size", err)
	}
	f.azureRaw = `{"name":"` + strings.Repeat("a", MaxResponse) + `"}`
	if _, err := fast(url).Lookup(t.Context(), Azure); err == nil || !strings.Contains(err.Error(), "larger than 65536 bytes") {
		t.Errorf("azure: %v, want the answer refused for its size", err)
	}
}

func TestAzure(t *testing.T) {
	_, url := newFakeIMDS(t)
	id, err := fast(url).Lookup(t.Context(), Azure)
	if err != nil {
		t.Fatal(err)
	}
	want := Identity{
		NodeName:   "md-0-abcde",
		ProviderID: "azure:///subscriptions/8d10da13-8125-4ba9-a717-bf7490507b3d/resourceGroups/my-cluster/providers/Microsoft.Compute/virtualMachines/MD-0-Abcde",
	}
	if id != want {
		t.Errorf("identity %+v, want %+v", id, want)
	}
}

func TestAzureRefusesWhatIsNotAnIdentity(t *testing.T) {
	const sub = "/subscriptions/8d10da13-8125-4ba9-a717-bf7490507b3d"
	for _, tc := range []struct {
		name, resourceID, raw, want string
	}{
		{name: "vm", resourceID: sub + "/resourceGroups/g/providers/Microsoft.Compute/virtualMachines/vm\" --x", want: `resourceId "/subscriptions/`},
		{name: "vm", resourceID: sub + "/resourceGroups/g/providers/Microsoft.Compute/virtualMachineScaleSets/ss/virtualMachines/vm", want: "is not a virtual machine's"},
		{name: "vm", resourceID: sub + "/resourceGroups/g/providers/Microsoft.Network/virtualMachines/vm", want: "is not a virtual machine's"},
		{name: "vm", resourceID: "/subscriptions/x/resourceGroups/g/providers/Microsoft.Compute/virtualMachines/vm", want: "is not a virtual machine's"},
		{name: "vm", resourceID: sub + "/resourceGroups/a b/providers/Microsoft.Compute/virtualMachines/vm", want: "is not a virtual machine's"},
		{name: "vm", resourceID: "", want: `resourceId ""`},
		{name: "other", resourceID: sub + "/resourceGroups/g/providers/Microsoft.Compute/virtualMachines/vm", want: `name "other" is not the virtual machine`},
		{name: "vm_1", resourceID: sub + "/resourceGroups/g/providers/Microsoft.Compute/virtualMachines/vm_1", want: `VM name "vm_1" is not a Node name`},
		{raw: "<html>captive portal</html>", want: "not the compute metadata"},
		{raw: `{"resourceId": 7}`, want: "not the compute metadata"},
	} {
		f, url := newFakeIMDS(t)
		if tc.raw != "" {
			f.azureRaw = tc.raw
		} else {
			f.azure["name"], f.azure["resourceId"] = tc.name, tc.resourceID
		}
		_, err := fast(url).Lookup(t.Context(), Azure)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "Azure instance metadata") {
			t.Errorf("%q %q %q: %v, want an error with %q", tc.name, tc.resourceID, tc.raw, err, tc.want)
		}
	}
}

func TestKubeVirt(t *testing.T) {
	host := func(name string) func() (string, error) { return func() (string, error) { return name, nil } }
	id, err := Client{Hostname: host("md-0-x7k2p")}.Lookup(t.Context(), KubeVirt)
	if want := (Identity{NodeName: "md-0-x7k2p", ProviderID: "kubevirt://md-0-x7k2p"}); err != nil || id != want {
		t.Errorf("identity %+v (%v), want %+v", id, err, want)
	}
	for _, bad := range []string{"", "MD-0", "md_0", "md-0 x", strings.Repeat("a", 254)} {
		if _, err := (Client{Hostname: host(bad)}).Lookup(t.Context(), KubeVirt); err == nil || !strings.Contains(err.Error(), "kubevirt: the host name") {
			t.Errorf("host name %q: %v, want refused", bad, err)
		}
	}
	failing := func() (string, error) { return "", errors.New("no uts") }
	if _, err := (Client{Hostname: failing}).Lookup(t.Context(), KubeVirt); err == nil || !strings.Contains(err.Error(), "no uts") {
		t.Errorf("failing host name: %v", err)
	}
}

// A service that is not there yet (5xx, throttled) is asked again; an
// answer that will not change (404, a redirect) ends the lookup at once.
func TestRetries(t *testing.T) {
	f, url := newFakeIMDS(t)
	f.override, f.overrideCount = map[string]int{"/latest/meta-data/instance-id": http.StatusServiceUnavailable}, 2
	if _, err := fast(url).Lookup(t.Context(), AWS); err != nil {
		t.Fatalf("after two 503s: %v", err)
	}
	if n := f.count("GET /latest/meta-data/instance-id"); n != 3 {
		t.Errorf("instance-id asked %d times, want 3", n)
	}
	for _, code := range []int{http.StatusNotFound, http.StatusFound, http.StatusForbidden} {
		f, url := newFakeIMDS(t)
		f.override = map[string]int{"/metadata/instance/compute": code}
		_, err := fast(url).Lookup(t.Context(), Azure)
		var se *statusError
		if !errors.As(err, &se) || se.code != code {
			t.Errorf("HTTP %d: %v", code, err)
		}
		if n := f.count("GET /metadata/instance/compute"); n != 1 {
			t.Errorf("HTTP %d: asked %d times, want once", code, n)
		}
	}
}

// A service that never answers, or is not there, ends the lookup at the
// deadline, with the last failure.
func TestDeadline(t *testing.T) {
	hang := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hang.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	for _, url := range []string{hang.URL, closed} {
		c := Client{Endpoint: url, RequestTimeout: 50 * time.Millisecond, Deadline: 300 * time.Millisecond, RetryWait: 10 * time.Millisecond}
		start := time.Now()
		_, err := c.Lookup(context.Background(), AWS)
		if err == nil || !strings.Contains(err.Error(), "EC2 instance metadata /latest/api/token: no answer in time") {
			t.Errorf("%s: %v", url, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: the lookup took %s, past its 300ms deadline", url, d)
		}
	}
}

func TestEndpointAndSource(t *testing.T) {
	for _, bad := range []string{"169.254.169.254", "file:///etc/passwd", "http://h/path", "http://h/?x=1"} {
		if _, err := (Client{Endpoint: bad}).Lookup(t.Context(), Azure); err == nil || !strings.Contains(err.Error(), "endpoint") {
			t.Errorf("endpoint %q: %v", bad, err)
		}
	}
	for _, s := range []string{"aws", "azure", "kubevirt"} {
		if src, err := ParseSource("--provider-id-from", s); err != nil || string(src) != s {
			t.Errorf("%s: %v", s, err)
		}
	}
	if _, err := ParseSource("--provider-id-from", "AWS"); err == nil || !strings.Contains(err.Error(), `--provider-id-from "AWS": want one of aws, azure, kubevirt`) {
		t.Errorf("AWS: %v", err)
	}
}

// TestAWSZones: availability, Local and Wavelength Zones are zones; a
// region alone, or anything else, is not.
func TestAWSZones(t *testing.T) {
	for zone, want := range map[string]bool{
		"us-east-1a": true, "us-gov-west-1a": true, "us-west-2-lax-1a": true, "us-east-1-wl1-bos-wlz-1": true,
		"us-east-1": false, "us-east-1a/i-0": false, "US-EAST-1A": false, "": false,
	} {
		if got := isAWSZone(zone); got != want {
			t.Errorf("zone %q: %v, want %v", zone, got, want)
		}
	}
}
