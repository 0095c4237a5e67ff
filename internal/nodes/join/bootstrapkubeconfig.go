package join

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
)

// The bootstrap kubeconfig holds the pool's token. The kubelet reads it
// only when it has no valid client certificate (it renews the certificate
// with the certificate itself), so it is removed as soon as the kubelet has
// one: a token left on disk could join other hosts until it expires. A node
// whose certificate expired while it was down joins again.

// DropBootstrapKubeconfig removes the bootstrap kubeconfig once the
// kubelet's kubeconfig holds a client certificate valid at now. gone says
// whether the file is gone.
func DropBootstrapKubeconfig(n *Node, now time.Time) (gone bool, err error) {
	path := n.BootstrapKubeconfigPath()
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if !kubeletCertified(n, now) {
		return false, nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("remove the bootstrap kubeconfig (it holds the join token): %w", err)
	}
	return true, nil
}

// kubeletCertified says whether the kubelet's kubeconfig names a client
// certificate valid at now, as the kubelet decides whether to bootstrap.
func kubeletCertified(n *Node, now time.Time) bool {
	cfg, err := clientcmd.LoadFromFile(n.KubeletKubeconfig())
	if err != nil {
		return false
	}
	kctx := cfg.Contexts[cfg.CurrentContext]
	if kctx == nil {
		return false
	}
	user := cfg.AuthInfos[kctx.AuthInfo]
	if user == nil {
		return false
	}
	data := user.ClientCertificateData
	if len(data) == 0 && user.ClientCertificate != "" {
		if data, err = os.ReadFile(user.ClientCertificate); err != nil {
			return false
		}
	}
	certs, err := certutil.ParseCertsPEM(data)
	if err != nil || len(certs) == 0 {
		return false
	}
	return !now.Before(certs[0].NotBefore) && now.Before(certs[0].NotAfter)
}

// dropBootstrapKubeconfigWhenCertified checks every second until the
// bootstrap kubeconfig is gone or ctx ends.
func dropBootstrapKubeconfigWhenCertified(ctx context.Context, n *Node, log logr.Logger) {
	for {
		gone, err := DropBootstrapKubeconfig(n, time.Now())
		if err != nil {
			log.Error(err, "bootstrap kubeconfig", "path", n.BootstrapKubeconfigPath())
		}
		if gone {
			log.Info("removed the bootstrap kubeconfig: the kubelet has its client certificate", "node", n.Name)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}
