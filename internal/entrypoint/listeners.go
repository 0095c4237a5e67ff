package entrypoint

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"syscall"

	"github.com/spf13/pflag"

	"hypershift.dev/internal/hostnet"
)

// operatorListenerFlags name the listeners of the operator that `up` and
// `operator` run.
var operatorListenerFlags = []string{"metrics-bind-address", "health-probe-bind-address"}

// checkListeners checks the operator's own listeners (the flags named)
// before anything starts, so that a taken address is refused naming its
// flag instead of stopping the management plane after it said ready. A
// default address that another process holds (a second management plane on
// this host) moves to a free port of the same host, said on out; the flag
// is set to it, so that a detached child gets the same address.
func checkListeners(flags *pflag.FlagSet, out io.Writer, names ...string) error {
	for _, name := range names {
		f := flags.Lookup(name)
		addr := f.Value.String()
		if addr == "0" || addr == "" {
			continue
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return fmt.Errorf("--%s %q: want HOST:PORT, or 0 to disable: %w", name, addr, err)
		}
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return fmt.Errorf("--%s %q: the port is not a number from 0 to 65535", name, addr)
		}
		l, err := net.Listen("tcp", addr)
		if err == nil {
			_ = l.Close()
			continue
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("--%s %s: %w", name, addr, err)
		}
		if f.Changed {
			return fmt.Errorf("--%s %s: the address is in use (another management plane on this host?): choose another address, or 0 to disable it", name, addr)
		}
		free, err := freePortOn(host)
		if err != nil {
			return fmt.Errorf("--%s: the default %s is in use and %w", name, addr, err)
		}
		if err := flags.Set(name, free); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s is in use (another management plane on this host?): --%s %s\n", addr, name, free)
	}
	return nil
}

// freePortOn is host with a port of hostnet's range that is free on every
// address.
func freePortOn(host string) (string, error) {
	l, err := hostnet.ListenFreePort(nil)
	if err != nil {
		return "", err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}
