package hostedcluster

import (
	"net"
	"strconv"
	"testing"
)

// TestLoopbackReaches: a port held by a listener is reached; one nothing
// listens on (as one a firewall rejects) is not, so a restore does not pin
// it.
func TestLoopbackReaches(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	if !loopbackReaches(port) {
		t.Errorf("port %s with a listener: not reached", port)
	}
	_ = l.Close()
	if loopbackReaches(port) {
		t.Errorf("port %s without a listener: reached", port)
	}
}
