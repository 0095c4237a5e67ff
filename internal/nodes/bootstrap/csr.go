package bootstrap

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Pending reports whether a CSR is neither approved nor denied nor failed.
func Pending(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			return false
		}
	}
	return true
}

// NodeNameOf returns the node a CSR's requester is, or "" when the
// requester is not a node.
func NodeNameOf(csr *certificatesv1.CertificateSigningRequest) string {
	if len(csr.Spec.Username) <= len(NodeUserPrefix) || csr.Spec.Username[:len(NodeUserPrefix)] != NodeUserPrefix {
		return ""
	}
	return csr.Spec.Username[len(NodeUserPrefix):]
}

// CheckServingCSR returns nil when csr is a request that node's kubelet may
// get signed as its serving certificate: for the kubelet-serving signer,
// made by system:node:<name> in group system:nodes, for
// CN=system:node:<name>, O=system:nodes, with only server usages, and with
// subject alternative names that are all addresses recorded for that
// Node (RecordedAddresses), not those its status says now. The kubelet
// serves the API server's logs, exec and port-forward requests: a
// certificate for an address the node does not have would let it pose as
// another host.
func CheckServingCSR(csr *certificatesv1.CertificateSigningRequest, node *corev1.Node) error {
	if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName {
		return fmt.Errorf("signer is %q, not %s", csr.Spec.SignerName, certificatesv1.KubeletServingSignerName)
	}
	want := NodeUserPrefix + node.Name
	if csr.Spec.Username != want {
		return fmt.Errorf("requested by %q, not %q", csr.Spec.Username, want)
	}
	if !slices.Contains(csr.Spec.Groups, NodesGroup) {
		return fmt.Errorf("requester is not in group %s", NodesGroup)
	}
	for _, u := range csr.Spec.Usages {
		switch u {
		case certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth:
		default:
			return fmt.Errorf("usage %q is not allowed for a serving certificate", u)
		}
	}
	if !slices.Contains(csr.Spec.Usages, certificatesv1.UsageServerAuth) {
		return errors.New("usage \"server auth\" is missing")
	}
	req, err := parseRequest(csr.Spec.Request)
	if err != nil {
		return err
	}
	if req.Subject.CommonName != want {
		return fmt.Errorf("subject CN is %q, not %q", req.Subject.CommonName, want)
	}
	if len(req.Subject.Organization) != 1 || req.Subject.Organization[0] != NodesGroup {
		return fmt.Errorf("subject O is %q, not [%s]", req.Subject.Organization, NodesGroup)
	}
	if len(req.EmailAddresses) > 0 || len(req.URIs) > 0 {
		return errors.New("email and URI subject alternative names are not allowed")
	}
	if len(req.DNSNames)+len(req.IPAddresses) == 0 {
		return errors.New("no DNS or IP subject alternative names")
	}
	recorded, ok := RecordedAddresses(node)
	if !ok {
		return fmt.Errorf("node %s's addresses are not recorded yet", node.Name)
	}
	dnsNames, ips := splitAddresses(recorded)
	for _, name := range req.DNSNames {
		if !slices.Contains(dnsNames, name) {
			return fmt.Errorf("DNS name %q is not an address recorded for node %s", name, node.Name)
		}
	}
	for _, ip := range req.IPAddresses {
		if !slices.ContainsFunc(ips, ip.Equal) {
			return fmt.Errorf("IP address %s is not an address recorded for node %s", ip, node.Name)
		}
	}
	return nil
}

func parseRequest(data []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("request is not a PEM certificate request")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse request: %w", err)
	}
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("request signature: %w", err)
	}
	return req, nil
}

// splitAddresses splits recorded addresses into DNS names and IPs.
func splitAddresses(addrs []string) (dnsNames []string, ips []net.IP) {
	for _, a := range addrs {
		if ip := net.ParseIP(a); ip != nil {
			ips = append(ips, ip)
		} else {
			dnsNames = append(dnsNames, a)
		}
	}
	return dnsNames, ips
}

// Approve approves a CSR.
func Approve(ctx context.Context, c kubernetes.Interface, csr *certificatesv1.CertificateSigningRequest, reason, message string) error {
	return decide(ctx, c, csr, certificatesv1.CertificateApproved, reason, message)
}

// Deny denies a CSR.
func Deny(ctx context.Context, c kubernetes.Interface, csr *certificatesv1.CertificateSigningRequest, reason, message string) error {
	return decide(ctx, c, csr, certificatesv1.CertificateDenied, reason, message)
}

// decide records an approval or denial on a CSR.
func decide(ctx context.Context, c kubernetes.Interface, csr *certificatesv1.CertificateSigningRequest, decision certificatesv1.RequestConditionType, reason, message string) error {
	csr = csr.DeepCopy()
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type:           decision,
		Status:         corev1.ConditionTrue,
		Reason:         reason,
		Message:        message,
		LastUpdateTime: metav1.Now(),
	})
	if _, err := c.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		verb := "approve"
		if decision == certificatesv1.CertificateDenied {
			verb = "deny"
		}
		return fmt.Errorf("%s CSR %s: %w", verb, csr.Name, err)
	}
	return nil
}
