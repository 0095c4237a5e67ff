package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// recoveryResult is how long a hosted API takes to answer again after a
// failure, median of n rounds each.
type recoveryResult struct {
	status
	Rounds int `json:"rounds"`
	// APIServerKillS: SIGKILL of the single API server until GET /version
	// answers again.
	APIServerKillS *dist `json:"apiserver_kill_s,omitempty"`
	// EtcdKillS: SIGKILL of etcd until a LIST of ConfigMaps (served from
	// etcd) answers again.
	EtcdKillS *dist `json:"etcd_kill_s,omitempty"`
	// ManagementRestartS: SIGKILL of `hypershift up`, then `up --detach`
	// until the HostedCluster is Available again with every component
	// adopted; the hosted API is polled throughout.
	ManagementRestartS *dist `json:"management_restart_s,omitempty"`
	// HostedErrorsDuringManagementLoss counts failed GETs of the hosted API
	// while the management plane was down, over all rounds.
	HostedErrorsDuringManagementLoss   int `json:"hosted_errors_during_management_loss"`
	HostedRequestsDuringManagementLoss int `json:"hosted_requests_during_management_loss"`
}

func runRecovery(ctx context.Context, opts *options) *recoveryResult {
	res := &recoveryResult{Rounds: 5}
	if opts.quick {
		res.Rounds = 2
	}
	p, err := startPlane(ctx, opts, opts.tmp+"-r")
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer p.stop()
	const name = "rec"
	if err := p.create(ctx, name); err != nil {
		res.Error = err.Error()
		return res
	}
	if err := p.waitAvailable(ctx, name, 5*time.Minute, nil); err != nil {
		res.Error = err.Error()
		return res
	}
	cfg, err := p.hostedRESTConfig(ctx, name)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	cfg.Timeout = 2 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	version := func(ctx context.Context) error {
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/version").DoRaw(ctx)
		return err
	}
	list := func(ctx context.Context) error {
		_, err := cs.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{})
		return err
	}
	var api, etcd, mgmt []float64
	for round := range res.Rounds {
		d, err := killAndWait(ctx, p, name, "kube-apiserver", version)
		if err != nil {
			res.Error = err.Error()
			break
		}
		api = append(api, d)
		d, err = killAndWait(ctx, p, name, "etcd-0", list)
		if err != nil {
			res.Error = err.Error()
			break
		}
		etcd = append(etcd, d)
		d, errs, reqs, err := restartManagement(ctx, p, name, version)
		if err != nil {
			res.Error = err.Error()
			break
		}
		mgmt = append(mgmt, d)
		res.HostedErrorsDuringManagementLoss += errs
		res.HostedRequestsDuringManagementLoss += reqs
		fmt.Printf("   round %d: apiserver %.1fs, etcd %.1fs, management plane %.1fs (%d/%d hosted requests failed)\n",
			round+1, api[len(api)-1], etcd[len(etcd)-1], d, errs, reqs)
	}
	res.APIServerKillS = summarizeIfAny(api)
	res.EtcdKillS = summarizeIfAny(etcd)
	res.ManagementRestartS = summarizeIfAny(mgmt)
	return res
}

// killAndWait SIGKILLs an instance and times until ok answers, after the
// supervisor has recorded a new process.
func killAndWait(ctx context.Context, p *plane, cluster, instance string, ok func(context.Context) error) (float64, error) {
	pidFile := filepath.Join(p.clusterDir(cluster), instance, "pid.json")
	pid, err := recordedPID(pidFile)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return 0, fmt.Errorf("kill %s: %w", instance, err)
	}
	deadline := start.Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if newPID, err := recordedPID(pidFile); err == nil && newPID != pid && ok(ctx) == nil {
			return time.Since(start).Seconds(), nil
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return 0, err
		}
	}
	return 0, fmt.Errorf("%s did not recover within 2 minutes", instance)
}

// restartManagement kills `up`, polls the hosted API for 5 s without it,
// then times `up --detach` until the cluster is Available again.
func restartManagement(ctx context.Context, p *plane, cluster string, ok func(context.Context) error) (float64, int, int, error) {
	pid, err := recordedPID(filepath.Join(p.dataDir, "up.pid"))
	if err != nil {
		return 0, 0, 0, err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return 0, 0, 0, fmt.Errorf("kill up: %w", err)
	}
	errs, reqs := 0, 0
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		reqs++
		if ok(ctx) != nil {
			errs++
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return 0, 0, 0, err
		}
	}
	start := time.Now()
	if out, err := p.up(ctx); err != nil {
		return 0, 0, 0, fmt.Errorf("up: %w\n%s", err, out)
	}
	if err := p.waitAvailable(ctx, cluster, 2*time.Minute, nil); err != nil {
		return 0, 0, 0, err
	}
	return time.Since(start).Seconds(), errs, reqs, nil
}

func recordedPID(path string) (int, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var rec struct {
		PID int `json:"pid"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		return 0, fmt.Errorf("parse %s: %w", path, err)
	}
	return rec.PID, nil
}

func summarizeIfAny(samples []float64) *dist {
	if len(samples) == 0 {
		return nil
	}
	d := distOf(samples)
	return &d
}
