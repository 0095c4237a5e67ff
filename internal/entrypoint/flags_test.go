package entrypoint

import (
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// componentGlobalFlag stands in for the flags the compiled-in components
// register on pflag's global set at init (component-base's --version).
const componentGlobalFlag = "component-global-flag"

var _ = pflag.CommandLine.Bool(componentGlobalFlag, false, "registered by a compiled-in component")

// TestHelpShowsOnlyOwnFlags: every flag that `hypershift --help` lists is
// one the CLI defines itself (test/e2e TestHostedClusters checks that
// `component kube-apiserver --version` still works).
func TestHelpShowsOnlyOwnFlags(t *testing.T) {
	out, err := run(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	own := map[string]bool{"help": true, "kubeconfig": true, "data-dir": true}
	var shown []string
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([\w-]+)`).FindAllStringSubmatch(out, -1) {
		shown = append(shown, m[1])
		if !own[m[1]] {
			t.Errorf("hypershift --help lists --%s, which the CLI does not define:\n%s", m[1], out)
		}
	}
	sort.Strings(shown)
	if strings.Join(shown, ",") != "data-dir,help,kubeconfig" {
		t.Errorf("hypershift --help lists %v, want data-dir, help, kubeconfig", shown)
	}
	if _, err := run(t, "get", "clusters", "--"+componentGlobalFlag); err == nil || !strings.Contains(err.Error(), "unknown flag") {
		t.Errorf("a component's global flag was accepted by `get clusters` (err %v)", err)
	}
}
