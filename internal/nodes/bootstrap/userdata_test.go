package bootstrap

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// The userdata is a script sh runs: it writes the token to a file and
// runs exactly the join line, with the token nowhere on it. Run here with
// a stand-in `hypershift` on PATH that records its arguments, and with
// /var/lib under a temporary directory. A machine of KubeVirt, AWS or
// Azure learns its Node's name and provider ID from what its provider
// reports; other platforms' machines from their environment.
func TestUserdataRunsTheJoin(t *testing.T) {
	for platform, extra := range map[hypershiftv1alpha1.PlatformType][]string{
		hypershiftv1alpha1.HostPlatform:      nil,
		hypershiftv1alpha1.NonePlatform:      nil,
		hypershiftv1alpha1.KubeVirtPlatform:  {"--provider-id-from", "kubevirt"},
		hypershiftv1alpha1.AWSPlatform:       {"--provider-id-from", "aws"},
		hypershiftv1alpha1.AzurePlatform:     {"--provider-id-from", "azure"},
		hypershiftv1alpha1.SimulatedPlatform: nil,
	} {
		t.Run(string(platform), func(t *testing.T) { userdataRunsTheJoin(t, platform, extra) })
	}
}

func userdataRunsTheJoin(t *testing.T, platform hypershiftv1alpha1.PlatformType, extra []string) {
	j := Join{Server: "https://10.210.0.1:6443", Token: Token{ID: "abcdef", Secret: "0123456789abcdef"}, CAHash: "sha256:00ff"}
	ud, err := Userdata(j, "1.36.3", platform)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	// The script's absolute paths, rooted in the test's directory.
	script := strings.ReplaceAll(string(ud), "/var/lib/", root+"/var/lib/")
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	args := filepath.Join(dir, "args")
	fake := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + args + "\n"
	if err := os.WriteFile(filepath.Join(bin, "hypershift"), []byte(fake), 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("userdata: %v\n%s", err, out)
	}
	got, err := os.ReadFile(args)
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := root + UserdataTokenFile
	want := strings.Join(append([]string{"join", "--server", j.Server, "--token-file", tokenFile, "--ca-cert-hash", j.CAHash, "--kubernetes-version", "1.36.3"}, extra...), "\n") + "\n"
	if string(got) != want {
		t.Errorf("join ran with\n%s\nwant\n%s", got, want)
	}
	tok, err := os.ReadFile(tokenFile)
	if err != nil || string(tok) != "abcdef.0123456789abcdef\n" {
		t.Errorf("token file %q (%v)", tok, err)
	}
	if fi, err := os.Stat(tokenFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	if strings.Contains(string(got), j.Token.Secret) {
		t.Error("the token is on the join line")
	}
}

// A value that would need quoting is refused, not escaped.
func TestUserdataRefusesWhatItWouldHaveToQuote(t *testing.T) {
	for _, j := range []Join{
		{Server: "https://a'; rm -rf / #", Token: Token{ID: "abcdef", Secret: "0123456789abcdef"}, CAHash: "sha256:00"},
		{Server: "https://a:6443", Token: Token{ID: "abcdef", Secret: "0123456789abcdef"}, CAHash: "sha256:00 --x"},
	} {
		if _, err := Userdata(j, "", hypershiftv1alpha1.AWSPlatform); err == nil {
			t.Errorf("userdata for %+v made", j)
		}
	}
	if _, err := Userdata(Join{Server: "https://a:6443", Token: Token{ID: "abcdef", Secret: "0123456789abcdef"}, CAHash: "sha256:00"}, "1.36.3$(id)", hypershiftv1alpha1.AWSPlatform); err == nil {
		t.Error("a version with $( made userdata")
	}
}
