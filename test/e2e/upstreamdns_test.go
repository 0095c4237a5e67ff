package e2e

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// Cluster DNS forwards names outside the cluster to the node's resolver
// (`forward . /etc/resolv.conf`; the CoreDNS pods have dnsPolicy Default,
// so that is the node's /etc/resolv.conf). Offline, that resolver answers
// nothing a test controls, and pointing the host at another resolver would
// change every program on it. So the test stands in for the upstream: a
// DNS server in the test on the node's address, and one DNAT rule that
// sends only the hosted cluster's pods' queries to the nameservers of
// /etc/resolv.conf (traffic from the cluster network, in PREROUTING — the
// host's own lookups go through OUTPUT and are untouched) to it. The name
// it answers exists nowhere else, so a pod resolving it proves the query
// went pod → CoreDNS → the nameserver resolv.conf names.

// upstreamDNS answers A queries for one name with one address, NOERROR
// without answers for the name's other types, and NXDOMAIN for every
// other name; it records what it was asked.
type upstreamDNS struct {
	conn    *net.UDPConn
	name    string // lower case, rooted
	ip      net.IP
	mu      sync.Mutex
	queries []string
}

func startUpstreamDNS(t *testing.T, listen net.IP, name string, ip net.IP) *upstreamDNS {
	t.Helper()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: listen})
	if err != nil {
		t.Fatalf("the test's upstream DNS server on %s: %v", listen, err)
	}
	t.Cleanup(func() { conn.Close() })
	d := &upstreamDNS{conn: conn, name: strings.ToLower(strings.TrimSuffix(name, ".") + "."), ip: ip.To4()}
	go d.serve()
	return d
}

func (d *upstreamDNS) addr() string { return d.conn.LocalAddr().String() }

func (d *upstreamDNS) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := d.conn.ReadFromUDP(buf)
		if err != nil {
			return
		}
		reply, what := d.answer(buf[:n])
		d.mu.Lock()
		d.queries = append(d.queries, what+" from "+from.String())
		d.mu.Unlock()
		if reply != nil {
			_, _ = d.conn.WriteToUDP(reply, from)
		}
	}
}

// asked lists the queries so far, for failure messages.
func (d *upstreamDNS) asked() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.queries...)
}

// answer builds the reply to one query (RFC 1035 4.1) and says what was
// asked.
func (d *upstreamDNS) answer(req []byte) ([]byte, string) {
	if len(req) < 12 || binary.BigEndian.Uint16(req[4:6]) != 1 {
		return nil, "a malformed query"
	}
	var labels []string
	off := 12
	for {
		if off >= len(req) {
			return nil, "a truncated query"
		}
		l := int(req[off])
		off++
		if l == 0 {
			break
		}
		if l > 63 || off+l > len(req) {
			return nil, "a query with a bad name"
		}
		labels = append(labels, string(req[off:off+l]))
		off += l
	}
	if off+4 > len(req) {
		return nil, "a truncated query"
	}
	qtype := binary.BigEndian.Uint16(req[off : off+2])
	question := req[12 : off+4]
	name := strings.ToLower(strings.Join(labels, ".") + ".")
	what := fmt.Sprintf("%s type %d", name, qtype)

	flags := uint16(0x8000|0x0400|0x0080) | binary.BigEndian.Uint16(req[2:4])&0x7900 // QR AA RA; opcode and RD from the query
	var answers []byte
	switch {
	case name != d.name:
		flags |= 3 // NXDOMAIN
	case qtype == 1: // A
		answers = binary.BigEndian.AppendUint16(answers, 0xc00c) // the question's name
		answers = binary.BigEndian.AppendUint16(answers, 1)      // A
		answers = binary.BigEndian.AppendUint16(answers, 1)      // IN
		answers = binary.BigEndian.AppendUint32(answers, 5)      // TTL
		answers = binary.BigEndian.AppendUint16(answers, 4)
		answers = append(answers, d.ip...)
	}
	reply := append([]byte(nil), req[0:2]...)
	reply = binary.BigEndian.AppendUint16(reply, flags)
	reply = binary.BigEndian.AppendUint16(reply, 1)
	reply = binary.BigEndian.AppendUint16(reply, uint16(min(len(answers), 1)))
	reply = append(reply, 0, 0, 0, 0)
	reply = append(reply, question...)
	return append(reply, answers...), what
}

// resolvConfNameservers lists the nameservers of /etc/resolv.conf that a
// pod can reach through the host (IPv4, not loopback), and the others.
func resolvConfNameservers(t *testing.T) (usable, unusable []string) {
	t.Helper()
	f, err := os.Open("/etc/resolv.conf")
	if err != nil {
		return nil, []string{"/etc/resolv.conf: " + err.Error()}
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || fields[0] != "nameserver" {
			continue
		}
		if ip := net.ParseIP(fields[1]); ip != nil && ip.To4() != nil && !ip.IsLoopback() {
			usable = append(usable, ip.String())
		} else {
			unusable = append(unusable, fields[1])
		}
	}
	return usable, unusable
}

// redirectPodDNS adds, for each nameserver, a nat PREROUTING rule that
// sends UDP DNS queries from clusterCIDR to it to the upstream instead;
// t.Cleanup deletes exactly those rules. It returns why it cannot, if so.
func redirectPodDNS(t *testing.T, clusterCIDR string, d *upstreamDNS) (skipReason string) {
	t.Helper()
	nameservers, unusable := resolvConfNameservers(t)
	if len(nameservers) == 0 {
		return fmt.Sprintf("/etc/resolv.conf names no nameserver a pod reaches through the host (IPv4, not loopback; it has %v): CoreDNS has nowhere to forward to on this host", unusable)
	}
	comment := "hypershift e2e " + randomHex(t, 3) + ": cluster DNS upstream"
	for _, ns := range nameservers {
		rule := []string{
			"PREROUTING", "-s", clusterCIDR, "-d", ns + "/32", "-p", "udp", "--dport", "53",
			"-m", "comment", "--comment", comment, "-j", "DNAT", "--to-destination", d.addr(),
		}
		iptables(t, "iptables", append([]string{"-w", "-t", "nat", "-I"}, rule...)...)
		t.Cleanup(func() {
			if out, err := exec.Command("iptables", append([]string{"-w", "-t", "nat", "-D"}, rule...)...).CombinedOutput(); err != nil {
				t.Errorf("delete the test's DNAT rule %v: %v\n%s", rule, err, out)
			}
		})
	}
	t.Logf("pods' DNS queries to %v go to the test's upstream %s", nameservers, d.addr())
	return ""
}

// lookupAt asks the DNS server at server (host:port) over UDP for name's
// one A record.
func lookupAt(server, name string) ([]string, error) {
	c, err := net.DialTimeout("udp", server, 3*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	ip, err := queryA(c, name)
	if err != nil {
		return nil, fmt.Errorf("%s asked for %s: %w", server, name, err)
	}
	return []string{ip.String()}, nil
}

// queryA sends one A query for name over conn and returns the address
// answered, or the reply's rcode as an error.
func queryA(conn net.Conn, name string) (net.IP, error) {
	q := []byte{0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0} // id, RD, one question
	for _, l := range strings.Split(strings.TrimSuffix(name, "."), ".") {
		q = append(append(q, byte(len(l))), l...)
	}
	q = append(q, 0, 0, 1, 0, 1) // root, A, IN
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := conn.Write(q); err != nil {
		return nil, err
	}
	buf := make([]byte, 1500)
	n, err := conn.Read(buf)
	if err != nil {
		return nil, err
	}
	reply := buf[:n]
	if n < 12 || reply[0] != 0x12 || reply[1] != 0x34 {
		return nil, fmt.Errorf("a malformed reply %x", reply)
	}
	if rcode := reply[3] & 0xf; rcode != 0 || binary.BigEndian.Uint16(reply[6:8]) != 1 || n < 4 {
		return nil, fmt.Errorf("rcode %d, %d answers", rcode, binary.BigEndian.Uint16(reply[6:8]))
	}
	return net.IP(reply[n-4:]), nil
}

func TestUpstreamDNS(t *testing.T) {
	ownDirAndPorts(t)
	d := startUpstreamDNS(t, net.IPv4(127, 0, 0, 1), "Outside.Example.TEST", net.IPv4(203, 0, 113, 7))
	got, err := lookupAt(d.addr(), "outside.example.test.")
	if err != nil || strings.Join(got, ",") != "203.0.113.7" {
		t.Errorf("lookup of the upstream's name: %v, %v; want 203.0.113.7", got, err)
	}
	if got, err := lookupAt(d.addr(), "other.example.test."); err == nil || !strings.Contains(err.Error(), "rcode 3") {
		t.Errorf("lookup of another name: %v, %v; want NXDOMAIN (rcode 3)", got, err)
	}
	if asked := strings.Join(d.asked(), "\n"); !strings.Contains(asked, "outside.example.test. type 1 from 127.0.0.1:") || !strings.Contains(asked, "other.example.test. type 1") {
		t.Errorf("the upstream recorded:\n%s", asked)
	}
}
