package join

import (
	"slices"
	"strings"
	"testing"
)

const natBefore = `*nat
:PREROUTING ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:FOREIGN - [0:0]
-A POSTROUTING -s 192.0.2.99/32 -j FOREIGN
-A POSTROUTING -o eth0 -j MASQUERADE
-A FOREIGN -j RETURN
COMMIT
`

const natAfter = `*nat
:PREROUTING ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:CNI-0a1b2c - [0:0]
:FOREIGN - [0:0]
:KUBE-KUBELET-CANARY - [0:0]
-A POSTROUTING -s 192.0.2.99/32 -j FOREIGN
-A POSTROUTING -o eth0 -j MASQUERADE
-A POSTROUTING -s 10.244.0.5/32 -m comment --comment "name: \"hypershift\" id: \"abc\"" -j CNI-0a1b2c
-A POSTROUTING -o hs-cni0 -j ACCEPT
-A POSTROUTING -s 198.51.100.0/24 -j MASQUERADE
-A FOREIGN -j RETURN
-A FOREIGN -s 10.0.0.1/32 -j KUBE-KUBELET-CANARY
-A CNI-0a1b2c -d 10.244.0.0/24 -j ACCEPT
COMMIT
`

// Reset removes the node's chains, the jumps to them (also from a foreign
// chain) and the node's rules in built-in chains; foreign chains and rules
// in built-in chains stay, also one added after the join.
func TestTableCleanup(t *testing.T) {
	before, after := parseTable(natBefore), parseTable(natAfter)
	if !slices.Equal(after.Builtin, []string{"PREROUTING", "POSTROUTING"}) {
		t.Errorf("built-in chains = %v", after.Builtin)
	}
	got := tableCleanup(before, after)
	want := []string{
		`-D POSTROUTING -s 10.244.0.5/32 -m comment --comment "name: \"hypershift\" id: \"abc\"" -j CNI-0a1b2c`,
		`-D POSTROUTING -o hs-cni0 -j ACCEPT`,
		`-D FOREIGN -s 10.0.0.1/32 -j KUBE-KUBELET-CANARY`,
		`-F CNI-0a1b2c`, `-F KUBE-KUBELET-CANARY`,
		`-X CNI-0a1b2c`, `-X KUBE-KUBELET-CANARY`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("tableCleanup =\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if got := tableCleanup(after, after); len(got) != 0 {
		t.Errorf("tableCleanup of an unchanged table = %v", got)
	}
}

func TestUnescapeMount(t *testing.T) {
	if got := unescapeMount(`/a\040b/c`); got != "/a b/c" {
		t.Errorf("unescapeMount = %q", got)
	}
	if got := added([]string{"a", "b"}, []string{"b", "c", "a", "d"}); strings.Join(got, ",") != "c,d" {
		t.Errorf("added = %v", got)
	}
}
