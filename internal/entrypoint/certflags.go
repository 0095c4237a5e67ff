package entrypoint

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"hypershift.dev/internal/pki"
)

// minLeafValidity is the shortest leaf validity accepted: renewal runs
// at two thirds of it, and delivery needs the last third (tests use
// minutes; docs/security.md says what short validities cost).
const minLeafValidity = time.Minute

// certValidityFlags are --leaf-certificate-validity and --ca-validity of
// the commands that run control planes.
type certValidityFlags struct {
	leaf, ca time.Duration
}

func (c *certValidityFlags) add(f *pflag.FlagSet) {
	f.DurationVar(&c.leaf, "leaf-certificate-validity", pki.CertValidity,
		"how long new leaf certificates (serving, client, etcd, admin) are valid; each is renewed two thirds into its life")
	f.DurationVar(&c.ca, "ca-validity", pki.CAValidity,
		"how long new certificate authorities are valid (existing ones are kept; CA rotation is not automatic)")
}

// validate refuses validities that cannot work: a leaf shorter than a
// minute, or one that outlives the CA that signs it.
func (c *certValidityFlags) validate() error {
	if c.leaf < minLeafValidity {
		return fmt.Errorf("--leaf-certificate-validity %s: use at least %s (leaves renew at two thirds of their life)", c.leaf, minLeafValidity)
	}
	if c.ca < c.leaf {
		return fmt.Errorf("--ca-validity %s is shorter than --leaf-certificate-validity %s: a leaf must not outlive its CA", c.ca, c.leaf)
	}
	return nil
}

// applyClientCertReload shortens client-go's reload interval to a tenth of
// a short leaf validity, for this process and the components it starts.
func (c *certValidityFlags) applyClientCertReload() error {
	return pki.ShortenClientCertReload(c.leaf)
}
