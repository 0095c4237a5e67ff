package components

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

type testFlags struct{ Value string }

func (f testFlags) Args() []string {
	if f.Value == "" {
		return nil
	}
	return []string{"--value=" + f.Value}
}

func parseTestFlags(args []string) (testFlags, error) {
	var f testFlags
	for _, a := range args {
		v, ok := strings.CutPrefix(a, "--value=")
		if !ok {
			return testFlags{}, errors.New("unknown flag " + a)
		}
		f.Value = v
	}
	return f, nil
}

func noop(context.Context, []string) error { return nil }

// TestOwnRunsWhatParseReads: an own component's Main is its parser, then
// its runner, so the round-trip test of Parse covers what runs.
func TestOwnRunsWhatParseReads(t *testing.T) {
	var ran []testFlags
	c := Own("demo", parseTestFlags, func(_ context.Context, f testFlags) error {
		ran = append(ran, f)
		return nil
	})
	if !c.Own || c.Name != "demo" {
		t.Errorf("registration %+v", c)
	}
	if err := c.Main(t.Context(), []string{"--value=x"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Main(t.Context(), []string{"--other"}); err == nil {
		t.Error("a flag the parser refuses did not fail Main")
	}
	if len(ran) != 1 || ran[0].Value != "x" {
		t.Errorf("ran with %+v, want one run with value x", ran)
	}
	parsed, err := c.Parse([]string{"--value=x"})
	if err != nil || parsed != (testFlags{Value: "x"}) {
		t.Errorf("Parse = %+v, %v", parsed, err)
	}
	if _, err := (Registration{Name: "etcd", Main: noop}).Parse(nil); err == nil || !strings.Contains(err.Error(), "upstream") {
		t.Errorf("Parse of an upstream component: %v, want an error saying its flags are upstream's", err)
	}
}

func TestRegistry(t *testing.T) {
	r := Registry{
		{Name: Etcd, Main: noop},
		{Name: KubeAPIServer, Main: noop},
		Own("zeta", parseTestFlags, func(context.Context, testFlags) error { return nil }),
		Own("alpha", parseTestFlags, func(context.Context, testFlags) error { return nil }),
	}
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := r.Names(true); !slices.Equal(got, []string{"alpha", "zeta"}) {
		t.Errorf("own names %v", got)
	}
	if got := r.Names(false); !slices.Equal(got, []string{Etcd, KubeAPIServer}) {
		t.Errorf("compiled-in names %v", got)
	}
	if c, ok := r.Lookup("zeta"); !ok || c.Name != "zeta" {
		t.Errorf("Lookup(zeta) = %+v, %v", c, ok)
	}
	if _, ok := r.Lookup("kubelet"); ok {
		t.Error("Lookup found a component the registry does not hold")
	}
	for name, bad := range map[string]Registry{
		"registered twice": append(r, Registration{Name: Etcd, Main: noop}),
		"has no Main":      {{Name: "x"}},
		"has no name":      {{Main: noop}},
	} {
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("Validate = %v, want an error saying a component %s", err, name)
		}
	}
}
