package entrypoint

import (
	"bytes"
	"net"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func listenerFlags(t *testing.T, metrics string, set bool) *pflag.FlagSet {
	t.Helper()
	f := pflag.NewFlagSet("up", pflag.ContinueOnError)
	f.String("metrics-bind-address", metrics, "")
	f.String("health-probe-bind-address", "0", "")
	if set {
		if err := f.Set("metrics-bind-address", metrics); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func holdPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l.Addr().String()
}

// A taken address the user chose is refused before anything starts,
// naming the flag and the address.
func TestCheckListenersRefusesATakenAddressTheUserChose(t *testing.T) {
	taken := holdPort(t)
	f := listenerFlags(t, taken, true)
	err := checkListeners(f, &bytes.Buffer{}, operatorListenerFlags...)
	if err == nil || !strings.Contains(err.Error(), "--metrics-bind-address "+taken+": the address is in use") {
		t.Fatalf("checkListeners = %v, want the flag and %s named as in use", err, taken)
	}
}

// A taken default (a second management plane on the host) moves to a free
// port of the same host, set on the flag and said.
func TestCheckListenersMovesATakenDefault(t *testing.T) {
	taken := holdPort(t)
	f := listenerFlags(t, taken, false)
	var out bytes.Buffer
	if err := checkListeners(f, &out, operatorListenerFlags...); err != nil {
		t.Fatal(err)
	}
	got := f.Lookup("metrics-bind-address")
	host, _, err := net.SplitHostPort(got.Value.String())
	if got.Value.String() == taken || err != nil || host != "127.0.0.1" || !got.Changed {
		t.Fatalf("--metrics-bind-address = %q (changed %v), want another port of 127.0.0.1, passed on as set", got.Value, got.Changed)
	}
	l, err := net.Listen("tcp", got.Value.String())
	if err != nil {
		t.Fatalf("the moved address %s is not free: %v", got.Value, err)
	}
	_ = l.Close()
	if !strings.Contains(out.String(), taken+" is in use") || !strings.Contains(out.String(), got.Value.String()) {
		t.Errorf("output %q does not say which address was taken and which is used", out.String())
	}
}

func TestCheckListenersLeavesFreeAndDisabledAddresses(t *testing.T) {
	for _, addr := range []string{"0", freeAddress(t)} {
		f := listenerFlags(t, addr, true)
		var out bytes.Buffer
		if err := checkListeners(f, &out, operatorListenerFlags...); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
		if got := f.Lookup("metrics-bind-address").Value.String(); got != addr || out.Len() > 0 {
			t.Errorf("%s: became %q, said %q", addr, got, out.String())
		}
	}
	for _, bad := range []string{"8383", "127.0.0.1:http-alt", "127.0.0.1:70000"} {
		err := checkListeners(listenerFlags(t, bad, true), &bytes.Buffer{}, operatorListenerFlags...)
		if err == nil || !strings.Contains(err.Error(), "--metrics-bind-address") {
			t.Errorf("%s: %v, want an error naming the flag", bad, err)
		}
	}
}

func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}
