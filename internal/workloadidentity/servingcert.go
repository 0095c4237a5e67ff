package workloadidentity

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// servingCert is the key pair in certFile and keyFile, read again when
// either file's size or modification time changes. The files are checked
// at each TLS handshake, as endpointproxy's reloadingPool checks its CA
// bundle: two stats, no watcher goroutine, and a renewed certificate is
// served from the next connection on without a restart. A pair that does
// not load (a renewal written half-way: new certificate, old key) keeps
// the last good one until it does.
type servingCert struct {
	certFile, keyFile string
	log               logr.Logger

	mu       sync.Mutex
	certSeen fileStamp
	keySeen  fileStamp
	cert     *tls.Certificate
	// failed are the stamps of a pair that did not load, not tried (or
	// logged) again until a file changes.
	failedCert, failedKey fileStamp
}

// fileStamp is what says a file changed.
type fileStamp struct {
	size    int64
	modTime time.Time
}

func stamp(path string) (fileStamp, error) {
	info, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{size: info.Size(), modTime: info.ModTime()}, nil
}

func (f fileStamp) is(g fileStamp) bool { return f.size == g.size && f.modTime.Equal(g.modTime) }

// get is tls.Config.GetCertificate.
func (s *servingCert) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	certSeen, certErr := stamp(s.certFile)
	keySeen, keyErr := stamp(s.keyFile)
	if s.cert != nil && certErr == nil && keyErr == nil &&
		(certSeen.is(s.certSeen) && keySeen.is(s.keySeen) || certSeen.is(s.failedCert) && keySeen.is(s.failedKey)) {
		return s.cert, nil
	}
	cert, err := tls.LoadX509KeyPair(s.certFile, s.keyFile)
	if err == nil {
		s.cert, s.certSeen, s.keySeen = &cert, certSeen, keySeen
		return s.cert, nil
	}
	if s.cert == nil {
		return nil, fmt.Errorf("serving certificate %s and key %s: %w", s.certFile, s.keyFile, err)
	}
	s.failedCert, s.failedKey = certSeen, keySeen
	s.log.Error(err, "serving certificate not reloaded: serving the last one", "certFile", s.certFile, "keyFile", s.keyFile)
	return s.cert, nil
}
