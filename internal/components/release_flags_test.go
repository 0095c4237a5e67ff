package components

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"hypershift.dev/internal/release"
)

// hypershiftBinary is the binary under test, found as testenv.Binary finds
// it (testenv imports this package, so it cannot be used here).
func hypershiftBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: runs the hypershift binary (make test runs it)")
	}
	if b := os.Getenv("HYPERSHIFT_BIN"); b != "" {
		return b
	}
	b, err := filepath.Abs(filepath.Join("..", "..", "bin", "hypershift"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(b); err != nil {
		t.Fatalf("no hypershift binary at %s: run make build, or set HYPERSHIFT_BIN", b)
	}
	return b
}

// flagName is the name of a flag in an argument or a --help line.
var flagName = regexp.MustCompile(`^\s*(?:-[a-zA-Z], )?(--[a-z0-9-]+)`)

// TestRenderedFlagsExistInEveryRelease: every flag rendered for a release
// is one its components know (a flag a minor lacks or renamed would stop
// its control plane at start), for each release built beside the binary.
func TestRenderedFlagsExistInEveryRelease(t *testing.T) {
	catalog, err := release.Load(filepath.Join(filepath.Dir(hypershiftBinary(t)), "releases"))
	if err != nil {
		t.Fatal(err)
	}
	if len(catalog.Versions()) < 2 {
		t.Fatalf("no release besides the compiled-in one beside %s: run make build", hypershiftBinary(t))
	}
	for _, r := range catalog.Releases() {
		known := map[string]map[string]bool{}
		for _, scenario := range goldenScenarios() {
			cfg := scenario.cfg
			cfg.KubernetesVersion = r.Version
			specs, err := Render(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range specs {
				if s.Version != cfg.version() || (s.Component != KubeAPIServer && s.Component != KubeControllerManager && s.Component != KubeScheduler) {
					continue
				}
				if known[s.Component] == nil {
					known[s.Component] = helpFlags(t, r, s.Component)
				}
				for _, a := range s.Args {
					if m := flagName.FindStringSubmatch(a); m != nil && !known[s.Component][m[1]] {
						t.Errorf("%s %s (%s) has no flag %s", s.Component, r.Version, scenario.name, m[1])
					}
				}
			}
		}
	}
}

// helpFlags runs a component of a release with --help and returns its flags.
func helpFlags(t *testing.T, r release.Release, component string) map[string]bool {
	t.Helper()
	path, args := release.Command(r, component)
	if r.CompiledIn() {
		path = hypershiftBinary(t)
	}
	out, err := exec.CommandContext(t.Context(), path, append(args, "--help")...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v --help: %v\n%s", path, args, err, out)
	}
	flags := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if m := flagName.FindStringSubmatch(line); m != nil {
			flags[m[1]] = true
		}
	}
	if len(flags) < 20 {
		t.Fatalf("%s %v --help lists %d flags:\n%s", path, args, len(flags), out)
	}
	return flags
}
