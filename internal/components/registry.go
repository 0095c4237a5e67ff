package components

import (
	"context"
	"errors"
	"fmt"
	"sort"
)

// Main runs a component with its command line (what follows `hypershift
// component NAME`) until the component ends.
type Main func(ctx context.Context, args []string) error

// Flags is the configuration of one of hypershift's own components, as its
// spec carries it: Args renders it to the component's command line, and the
// component's parser reads the same line back.
type Flags interface {
	Args() []string
}

// Registration is one component the binary runs as `hypershift component
// NAME`: an upstream one compiled in (internal/components/embedded), or one
// of hypershift's own (see Own).
type Registration struct {
	Name string
	Main Main
	// Own is set for hypershift's own components.
	Own bool
	// parse reads an own component's command line into its Flags.
	parse func(args []string) (Flags, error)
}

// Own registers one of hypershift's own components from its package's
// parser and runner. `hypershift component NAME` runs exactly parse, then
// run, so the command line that C.Args renders into a spec is read back by
// the same parser that Parse exposes to the round-trip test.
func Own[C Flags](name string, parse func(args []string) (C, error), run func(context.Context, C) error) Registration {
	return Registration{
		Name: name,
		Own:  true,
		Main: func(ctx context.Context, args []string) error {
			cfg, err := parse(args)
			if err != nil {
				return err
			}
			return run(ctx, cfg)
		},
		parse: func(args []string) (Flags, error) { return parse(args) },
	}
}

// Parse reads an own component's command line into its configuration;
// Parse(nil) gives the defaults.
func (r Registration) Parse(args []string) (Flags, error) {
	if r.parse == nil {
		return nil, fmt.Errorf("component %s is not one of hypershift's own: its flags are upstream's", r.Name)
	}
	return r.parse(args)
}

// Registry is the one table of the components the binary runs. main builds
// it and passes it to the command line: only main links the compiled-in
// components (only internal/components/embedded imports k8s.io/kubernetes),
// so no other package or test binary does.
type Registry []Registration

// Lookup finds a component by name.
func (r Registry) Lookup(name string) (Registration, bool) {
	for _, c := range r {
		if c.Name == name {
			return c, true
		}
	}
	return Registration{}, false
}

// Names lists, sorted, the names of the own components (own) or of the
// compiled-in ones (!own).
func (r Registry) Names(own bool) []string {
	var names []string
	for _, c := range r {
		if c.Own == own {
			names = append(names, c.Name)
		}
	}
	sort.Strings(names)
	return names
}

// Validate checks that every component has a name, a Main, and a name no
// other component has.
func (r Registry) Validate() error {
	seen := map[string]bool{}
	var errs []error
	for i, c := range r {
		switch {
		case c.Name == "":
			errs = append(errs, fmt.Errorf("component registry: entry %d has no name", i))
		case seen[c.Name]:
			errs = append(errs, fmt.Errorf("component registry: %s is registered twice", c.Name))
		case c.Main == nil:
			errs = append(errs, fmt.Errorf("component registry: %s has no Main", c.Name))
		}
		seen[c.Name] = true
	}
	return errors.Join(errs...)
}
