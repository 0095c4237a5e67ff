package managementplane

import (
	"context"
	"fmt"
	"time"

	"hypershift.dev/internal/atomicfile"
)

// RenewCertificates renews the management plane's leaves two thirds into
// their life until ctx ends, as the HostedCluster controller does for
// hosted clusters: the new certificates are written in place for the
// components that re-read them (internal/runtime, Reloadable), and the
// kubeconfig file is rewritten. A failed renewal is retried in a minute
// (or sooner, at a tenth of the time left).
func (p *Plane) RenewCertificates(ctx context.Context) {
	for {
		wait := time.Until(p.certs.NextRenewal()) + time.Second
		t := time.NewTimer(max(wait, time.Second))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if err := p.renewOnce(ctx); err != nil {
			p.log.Error(err, "renew management plane certificates")
			retry := time.NewTimer(min(time.Minute, max(time.Second, time.Until(p.certs.NextRenewal())/10)))
			select {
			case <-ctx.Done():
				retry.Stop()
				return
			case <-retry.C:
			}
		}
	}
}

// renewOnce renews the leaves that are due and hands them to the running
// components and the kubeconfig file.
func (p *Plane) renewOnce(ctx context.Context) error {
	certs, err := p.renewal()
	if err != nil {
		return err
	}
	p.certs = certs
	if len(certs.Renewed) == 0 {
		return nil
	}
	specs, kc, err := p.render(certs)
	if err != nil {
		return err
	}
	if err := p.runtime.Apply(ctx, ref, specs); err != nil {
		return fmt.Errorf("apply renewed certificates: %w", err)
	}
	if err := atomicfile.Write(p.Kubeconfig, kc, 0o600); err != nil {
		return err
	}
	p.log.Info("renewed certificates", "certificates", certs.Renewed, "next", certs.NextRenewal().UTC().Format(time.RFC3339))
	return nil
}
