// Package coredns is the cluster DNS of hosted clusters: CoreDNS compiled in
// from github.com/coredns/coredns as a library, run as `hypershift component
// coredns -conf FILE` with upstream's flags. Only the plugins the Corefile
// of hosted clusters uses are linked (see Directives); upstream's binary
// links all of them.
package coredns

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"
	clog "github.com/coredns/coredns/plugin/pkg/log"

	"hypershift.dev/internal/components"

	// The plugins of Directives: each registers itself with caddy.
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

// Name is the component's name: `hypershift component coredns`.
const Name = "coredns"

// Component is its entry in the binary's component registry (main adds it).
var Component = components.Registration{Name: Name, Main: Main}

// Directives are the plugins this build runs, in upstream's execution order
// (core/dnsserver/zdirectives.go: a plugin sees the requests the ones after
// it answer). `metrics` is the plugin whose directive is `prometheus`. A
// Corefile naming any other plugin is refused with "unknown directive".
var Directives = []string{
	"reload",
	"ready",
	"health",
	"prometheus",
	"errors",
	"log",
	"loadbalance",
	"cache",
	"kubernetes",
	"loop",
	"forward",
}

// upstreamFlags are the flags coremain registers on the standard library's
// global flag set at init; Main parses exactly these, so the command line
// is upstream's whatever else in the binary uses that flag set.
var upstreamFlags = []string{"conf", "plugins", "pidfile", "version", "quiet", "log-format", "dns.port", "p"}

// Main runs CoreDNS with upstream's command line until ctx is done or the
// process gets SIGTERM or SIGINT, then stops its servers.
func Main(ctx context.Context, args []string) error {
	fs, err := flagSet(os.Stderr)
	if err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return fmt.Errorf("coredns: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("coredns: extra command line arguments: %v", fs.Args())
	}
	dnsserver.Directives = Directives
	switch {
	case fs.Lookup("version").Value.String() == "true":
		fmt.Printf("%s-%s\n", caddy.AppName, caddy.AppVersion)
		return nil
	case fs.Lookup("plugins").Value.String() == "true":
		fmt.Println(caddy.DescribePlugins())
		return nil
	}
	if format := fs.Lookup("log-format").Value.String(); format != "text" {
		if err := clog.Configure(format, os.Stdout); err != nil {
			return fmt.Errorf("coredns: -log-format: %w", err)
		}
	}
	clog.SetOutput(os.Stdout)
	log.SetFlags(coremain.LogFlags)

	// The "flag" loader coremain registered reads -conf.
	corefile, err := caddy.LoadCaddyfile("dns")
	if err != nil {
		return fmt.Errorf("coredns: load the Corefile: %w", err)
	}
	if len(corefile.Body()) == 0 {
		return errors.New("coredns: no Corefile: pass -conf FILE")
	}
	instance, err := caddy.Start(corefile)
	if err != nil {
		return fmt.Errorf("coredns: start: %w", err)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	stopped := make(chan struct{})
	go func() {
		// Wait spans reloads: a restarted instance shares the wait group.
		instance.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
		return errors.New("coredns: every server stopped")
	case <-ctx.Done():
		// Stop stops every instance, including those a reload started.
		if err := caddy.Stop(); err != nil {
			return fmt.Errorf("coredns: stop: %w", err)
		}
		return nil
	}
}

// flagSet is a fresh flag set holding coremain's flags (the same values, so
// the Corefile loader sees -conf), and nothing else of the global set.
func flagSet(out io.Writer) (*flag.FlagSet, error) {
	fs := flag.NewFlagSet(Name, flag.ContinueOnError)
	fs.SetOutput(out)
	for _, name := range upstreamFlags {
		f := flag.CommandLine.Lookup(name)
		if f == nil {
			return nil, fmt.Errorf("coredns: upstream flag -%s is not registered: coremain changed", name)
		}
		fs.Var(f.Value, f.Name, f.Usage)
	}
	return fs, nil
}
