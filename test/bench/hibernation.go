package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// hibernationResult is what a sleeping control plane costs and how fast it
// comes back (docs/hibernation.md).
type hibernationResult struct {
	status
	Rounds int `json:"rounds"`
	// ResumeS: spec.hibernation.enabled set false until Available.
	ResumeS *dist `json:"resume_to_available_s,omitempty"`
	// HibernatedRSSMiB: RSS of the processes of a hibernated cluster
	// (none), and of an idle-hibernated one (its endpoint proxy).
	HibernatedRSSMiB     float64 `json:"hibernated_rss_mib"`
	IdleHibernatedRSSMiB float64 `json:"idle_hibernated_rss_mib"`
	// IdleHibernatedAnonMiB is the proxy's RssAnon: its own memory, not
	// the binary's pages every process maps.
	IdleHibernatedAnonMiB float64 `json:"idle_hibernated_rss_anon_mib"`
	// WakeS: GET /version on an idle-hibernated cluster until answered.
	WakeS *dist `json:"wake_on_request_s,omitempty"`
}

func runHibernation(ctx context.Context, opts *options) *hibernationResult {
	res := &hibernationResult{Rounds: 5}
	if opts.quick {
		res.Rounds = 2
	}
	p, err := startPlane(ctx, opts, opts.tmp+"-h")
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer p.stop()
	idle := hostedCluster("idle")
	idle.Spec.Hibernation = &hypershiftv1alpha1.HibernationSpec{IdleAfter: &metav1.Duration{Duration: 10 * time.Second}}
	for _, hc := range []*hypershiftv1alpha1.HostedCluster{hostedCluster("sleepy"), idle} {
		if err := p.createCluster(ctx, hc); err != nil {
			res.Error = err.Error()
			return res
		}
	}
	for _, name := range []string{"sleepy", "idle"} {
		if err := p.waitAvailable(ctx, name, 5*time.Minute, nil); err != nil {
			res.Error = err.Error()
			return res
		}
	}
	if err := benchResume(ctx, p, res); err != nil {
		res.Error = err.Error()
		return res
	}
	if err := benchWake(ctx, p, res); err != nil {
		res.Error = err.Error()
	}
	return res
}

// benchResume hibernates and resumes "sleepy" Rounds times.
func benchResume(ctx context.Context, p *plane, res *hibernationResult) error {
	var resume, rss []float64
	for round := range res.Rounds {
		asked := time.Now()
		if err := p.setHibernation(ctx, "sleepy", true); err != nil {
			return err
		}
		if err := p.waitHibernated(ctx, "sleepy", asked, 2*time.Minute); err != nil {
			return err
		}
		rss = append(rss, summedRSSMiB(p.clusterDir("sleepy")))
		start := time.Now()
		if err := p.setHibernation(ctx, "sleepy", false); err != nil {
			return err
		}
		if err := p.waitAvailable(ctx, "sleepy", 3*time.Minute, nil); err != nil {
			return err
		}
		resume = append(resume, time.Since(start).Seconds())
		fmt.Printf("   round %d: resume → Available %.2f s; %.1f MiB left running while hibernated\n", round+1, resume[len(resume)-1], rss[len(rss)-1])
	}
	res.ResumeS = summarizeIfAny(resume)
	res.HibernatedRSSMiB = round1(median(rss))
	return nil
}

// benchWake waits for "idle" to hibernate when idle, then times a GET
// /version through its endpoint, Rounds times.
func benchWake(ctx context.Context, p *plane, res *hibernationResult) error {
	cfg, err := p.hostedRESTConfig(ctx, "idle")
	if err != nil {
		return err
	}
	cfg.Timeout = 2 * time.Minute
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	var wake, rss, anon []float64
	var woken time.Time
	for round := range res.Rounds {
		if err := p.waitHibernated(ctx, "idle", woken, 2*time.Minute); err != nil {
			return err
		}
		r, a := 0.0, 0.0
		for _, proc := range findProcs(p.clusterDir("idle")) {
			if m, ok := readMemory(proc.pid, false); ok {
				r, a = r+m.rss/1024, a+m.anon/1024
			}
		}
		rss, anon = append(rss, r), append(anon, a)
		start := time.Now()
		if err := getVersion(ctx, hc, cfg.Host); err != nil {
			return fmt.Errorf("GET /version of an idle-hibernated cluster: %w", err)
		}
		woken = time.Now()
		wake = append(wake, woken.Sub(start).Seconds())
		hc.CloseIdleConnections() // its keep-alive pings would be activity
		fmt.Printf("   round %d: wake on request %.2f s; %.1f MiB RSS, %.1f MiB anonymous (the endpoint proxy) while asleep\n",
			round+1, wake[len(wake)-1], rss[len(rss)-1], anon[len(anon)-1])
	}
	res.WakeS = summarizeIfAny(wake)
	res.IdleHibernatedRSSMiB = round1(median(rss))
	res.IdleHibernatedAnonMiB = round1(median(anon))
	return nil
}

func getVersion(ctx context.Context, c *http.Client, host string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, host+"/version", nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /version: %s", resp.Status)
	}
	return nil
}

func (p *plane) setHibernation(ctx context.Context, name string, enabled bool) error {
	hc := hostedCluster(name)
	patch := fmt.Appendf(nil, `{"spec":{"hibernation":{"enabled":%t}}}`, enabled)
	if err := p.client.Patch(ctx, hc, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("set spec.hibernation.enabled=%t on %s: %w", enabled, name, err)
	}
	return nil
}

// waitHibernated polls until the cluster reports Hibernated=True, a
// transition made at or after since (not a stale one from before a wake).
func (p *plane) waitHibernated(ctx context.Context, name string, since time.Time, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	hc := &hypershiftv1alpha1.HostedCluster{}
	for time.Now().Before(deadline) {
		if err := p.client.Get(ctx, client.ObjectKey{Namespace: clusterNamespace, Name: name}, hc); err == nil {
			if c := meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.Hibernated.String()); c != nil && c.Status == metav1.ConditionTrue &&
				!c.LastTransitionTime.Time.Before(since.Truncate(time.Second)) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("hosted cluster %s not hibernated after %s: %s", name, timeout, conditionSummary(hc))
}

func hibernationRows(h *hibernationResult, row func(name string, s status, value, notes string)) {
	distRow(row, "hibernation: resume → Available", h.status, h.ResumeS)
	distRow(row, "hibernation: wake on request (GET /version)", h.status, h.WakeS)
	row("hibernation: RSS while hibernated", h.status, fmt.Sprintf("%.1f MiB", h.HibernatedRSSMiB),
		fmt.Sprintf("every process stops; idle-hibernated: %.1f MiB, %.1f MiB anonymous (its endpoint proxy)", h.IdleHibernatedRSSMiB, h.IdleHibernatedAnonMiB))
}
