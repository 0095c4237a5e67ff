package entrypoint

import (
	"bytes"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/datadir"
	"hypershift.dev/internal/install"
	"hypershift.dev/internal/operator"
	"hypershift.dev/internal/testenv"
)

// TestOperatorKubeMode runs `hypershift operator --runtime=kube
// --leader-elect` as a user would: it installs the kube runtime's policy,
// takes the leader Lease, and hands it back when stopped.
func TestOperatorKubeMode(t *testing.T) {
	env := testenv.Start(t)
	kubeconfig := datadir.Layout{Root: env.DataDir}.ManagementKubeconfig()
	var logs bytes.Buffer
	cmd := exec.Command(testenv.Binary(t), "--data-dir", t.TempDir(), "--kubeconfig", kubeconfig, "operator",
		"--runtime=kube", "--leader-elect", "--leader-election-namespace=default",
		"--metrics-bind-address=0", "--health-probe-bind-address=0")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	ctx := t.Context()
	lease := &coordinationv1.Lease{}
	key := client.ObjectKey{Namespace: "default", Name: operator.LeaderElectionID}
	testenv.Eventually(t, time.Minute, "the operator to hold its Lease", func() (bool, error) {
		if err := env.Client.Get(ctx, key, lease); err != nil {
			return false, err
		}
		return lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "", nil
	})
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: install.RuntimePolicyName}, policy); err != nil {
		t.Fatal(err)
	}
	if msg := policy.Spec.Validations[0].MessageExpression; !strings.Contains(msg, "the kube runtime publishes through Services") {
		t.Errorf("the operator in kube mode left the runtime policy %q, want the kube runtime's", msg)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Fatalf("operator exited with %v:\n%s", err, logs.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("operator did not stop within a minute of SIGTERM:\n%s", logs.String())
	}
	if err := env.Client.Get(ctx, key, lease); err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("the stopped operator still holds the Lease (holder %q): a standby would wait for it to expire", *h)
	}
}
