package workloadidentity

import (
	"crypto/tls"
	"fmt"

	"github.com/go-logr/logr"
)

// newServingCert is the key pair in certFile and keyFile, read again when
// either changes (reloading): a renewed certificate is served from the
// next connection on.
func newServingCert(certFile, keyFile string, log logr.Logger) *reloading[*tls.Certificate] {
	return &reloading[*tls.Certificate]{
		files: []string{certFile, keyFile},
		what:  fmt.Sprintf("serving certificate %s and key %s", certFile, keyFile),
		load: func() (*tls.Certificate, error) {
			cert, err := tls.LoadX509KeyPair(certFile, keyFile)
			return &cert, err
		},
		log: log,
	}
}
