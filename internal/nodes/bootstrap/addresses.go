package bootstrap

import (
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// A Node's addresses are recorded when the NodePool controller first sees
// it bound, in labels the NodeRestriction admission plugin forbids its
// kubelet to set, change or remove: a kubelet may rewrite its Node's
// status at any time, so its serving certificates are approved against
// the record, never against the status. An address another Node recorded
// first is not recorded again: one node cannot get a serving certificate
// for another's address by claiming it.
const (
	// AddressCountLabel says how many addresses were recorded (possibly
	// 0): once it is there, the record is made.
	AddressCountLabel = "node-restriction.kubernetes.io/hypershift-addresses"
	// AddressLabelPrefix, followed by 0, 1, …, holds each recorded
	// address (an IPv6 address with '_' for ':').
	AddressLabelPrefix = "node-restriction.kubernetes.io/hypershift-address-"
	// MaxRecordedAddresses bounds the record.
	MaxRecordedAddresses = 4
)

// RecordedAddresses returns the addresses recorded on node, and whether a
// record was made.
func RecordedAddresses(node *corev1.Node) (addrs []string, recorded bool) {
	count, err := strconv.Atoi(node.Labels[AddressCountLabel])
	if err != nil || count < 0 || count > MaxRecordedAddresses {
		return nil, false
	}
	for i := range count {
		if v := node.Labels[AddressLabelPrefix+strconv.Itoa(i)]; v != "" {
			addrs = append(addrs, strings.ReplaceAll(v, "_", ":"))
		}
	}
	return addrs, true
}

// AddressRecord is the labels recording the node's status addresses that
// taken (addresses other Nodes recorded) does not hold, at most
// MaxRecordedAddresses, and the addresses it left out.
func AddressRecord(node *corev1.Node, taken map[string]string) (labels map[string]string, refused []string) {
	labels = map[string]string{}
	var kept []string
	for _, a := range node.Status.Addresses {
		addr := a.Address
		if ip := net.ParseIP(addr); ip != nil {
			addr = ip.String()
		}
		value := strings.ReplaceAll(addr, ":", "_")
		switch {
		case slices.Contains(kept, addr):
			continue
		case taken[addr] != "" && taken[addr] != node.Name,
			len(kept) == MaxRecordedAddresses,
			len(validation.IsValidLabelValue(value)) > 0:
			refused = append(refused, addr)
			continue
		}
		labels[AddressLabelPrefix+strconv.Itoa(len(kept))] = value
		kept = append(kept, addr)
	}
	labels[AddressCountLabel] = strconv.Itoa(len(kept))
	return labels, refused
}

// RecordedBy maps every address recorded on nodes to the Node that
// recorded it.
func RecordedBy(nodes []*corev1.Node) map[string]string {
	out := map[string]string{}
	for _, n := range nodes {
		addrs, _ := RecordedAddresses(n)
		for _, a := range addrs {
			if _, ok := out[a]; !ok {
				out[a] = n.Name
			}
		}
	}
	return out
}
