package clusterclient

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// PollInterval is how often a wait reads what it waits for.
const PollInterval = 200 * time.Millisecond

// WaitAvailable prints a line on out each time a condition of the
// HostedCluster changes, until Available=True or the timeout, when it names
// the condition that is not met and why. Reads that fail and are retried
// are said on errOut.
func WaitAvailable(ctx context.Context, out, errOut io.Writer, c client.Client, key client.ObjectKey, timeout time.Duration) error {
	start := time.Now()
	seen := map[string]string{}
	hc, err := Poll(ctx, c, key, timeout, errOut, func(hc *hypershiftv1alpha1.HostedCluster) (bool, error) {
		PrintConditionChanges(out, start, hc.Status.Conditions, seen)
		if err := CannotRun(hc); err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.Available.String())
		return cond != nil && cond.Status == metav1.ConditionTrue, nil
	})
	switch {
	case wait.Interrupted(err):
		return timeoutError(key, timeout, hc.Status.Conditions)
	case err != nil:
		return err
	}
	fmt.Fprintf(out, "hosted cluster %s is available at %s after %.1fs\n", key, hc.Status.Endpoint, time.Since(start).Seconds())
	fmt.Fprintf(out, "get its kubeconfig with: hypershift create kubeconfig --name %s --namespace %s > %s.kubeconfig\n", key.Name, key.Namespace, key.Name)
	return nil
}

// Poll reads the hosted cluster key every PollInterval and asks done
// about it, until done says so or fails, or for at most timeout
// (wait.Interrupted then). A deleted cluster ends the wait with an error; a
// read that fails otherwise is retried, and said on errOut when that is set.
// The cluster returned is the last one read, also on error.
func Poll(ctx context.Context, c client.Client, key client.ObjectKey, timeout time.Duration, errOut io.Writer, done func(*hypershiftv1alpha1.HostedCluster) (bool, error)) (*hypershiftv1alpha1.HostedCluster, error) {
	start := time.Now()
	hc := &hypershiftv1alpha1.HostedCluster{}
	err := wait.PollUntilContextTimeout(ctx, PollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, key, hc)
		switch {
		case err == nil:
			return done(hc)
		case apierrors.IsNotFound(err):
			return false, fmt.Errorf("hosted cluster %s was deleted while waiting", key)
		case errOut != nil && ctx.Err() == nil:
			fmt.Fprintf(errOut, "[%6.1fs] cannot read hosted cluster: %v (retrying)\n", time.Since(start).Seconds(), err)
		}
		return false, nil
	})
	return hc, err
}

// CannotRun says why a hosted cluster will not become Available without a
// change by the user: the operator judged this generation of its spec
// (ValidConfiguration=False: unsupported, or a control-plane namespace that
// another owner holds), so waiting longer changes nothing.
func CannotRun(hc *hypershiftv1alpha1.HostedCluster) error {
	cond := meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.ValidConfiguration.String())
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.ObservedGeneration != hc.Generation {
		return nil
	}
	return fmt.Errorf("hosted cluster %s/%s cannot run (%s): %s", hc.Namespace, hc.Name, cond.Reason, cond.Message)
}

// PrintConditionChanges prints on out, with the time since start, each
// condition whose status or message differs from what seen holds, and
// records it there.
func PrintConditionChanges(out io.Writer, start time.Time, conds []metav1.Condition, seen map[string]string) {
	sorted := append([]metav1.Condition(nil), conds...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].LastTransitionTime.Before(&sorted[j].LastTransitionTime) })
	for _, cond := range sorted {
		line := fmt.Sprintf("%s=%s", cond.Type, cond.Status)
		if cond.Message != "" {
			line += ": " + cond.Message
		}
		if seen[cond.Type] == line {
			continue
		}
		seen[cond.Type] = line
		fmt.Fprintf(out, "[%6.1fs] %s\n", time.Since(start).Seconds(), line)
	}
}

func timeoutError(key client.ObjectKey, timeout time.Duration, conds []metav1.Condition) error {
	cond := meta.FindStatusCondition(conds, hypershiftv1alpha1.Available.String())
	why := "the operator has not reported any status: is `hypershift up` (or `hypershift operator`) running?"
	if cond != nil {
		why = fmt.Sprintf("condition Available is %s (%s): %s", cond.Status, cond.Reason, cond.Message)
	}
	var notes []string
	for _, c := range conds {
		if c.Type == hypershiftv1alpha1.Degraded.String() && c.Status == metav1.ConditionTrue {
			notes = append(notes, "Degraded: "+c.Message)
		}
	}
	msg := fmt.Sprintf("hosted cluster %s not available after %s: %s", key, timeout, why)
	if len(notes) > 0 {
		msg += "\n" + strings.Join(notes, "\n")
	}
	return fmt.Errorf("%s\nsee `hypershift describe cluster %s --namespace %s`", msg, key.Name, key.Namespace)
}

// WaitGone waits until no HostedCluster with that UID is at nn.
func WaitGone(ctx context.Context, c client.Client, nn types.NamespacedName, uid types.UID, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, PollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		hc := &hypershiftv1alpha1.HostedCluster{}
		err := c.Get(ctx, nn, hc)
		return apierrors.IsNotFound(err) || (err == nil && hc.UID != uid), nil
	})
	if err != nil {
		return fmt.Errorf("hosted cluster %s still there after %s: see `hypershift describe cluster %s -n %s`", nn, timeout, nn.Name, nn.Namespace)
	}
	return nil
}

// WaitNodePoolReady prints each change of the pool's Ready condition on out
// until it is True for the pool's generation.
func WaitNodePoolReady(ctx context.Context, out io.Writer, c client.Client, key client.ObjectKey, timeout time.Duration) error {
	start := time.Now()
	last := ""
	np := &hypershiftv1alpha1.NodePool{}
	err := wait.PollUntilContextTimeout(ctx, PollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, key, np)
		if apierrors.IsNotFound(err) {
			return false, fmt.Errorf("nodepool %s was deleted while waiting", key)
		}
		if err != nil {
			return false, nil
		}
		cond := meta.FindStatusCondition(np.Status.Conditions, hypershiftv1alpha1.NodePoolReady.String())
		if cond == nil {
			return false, nil
		}
		line := fmt.Sprintf("Ready=%s: %s", cond.Status, cond.Message)
		if line != last {
			fmt.Fprintf(out, "[%6.1fs] nodepool %s %s\n", time.Since(start).Seconds(), key.Name, line)
			last = line
		}
		return cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == np.Generation, nil
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("nodepool %s not ready after %s: %s\nsee `kubectl -n %s get nodepool %s -o yaml`", key, timeout, last, key.Namespace, key.Name)
	}
	return err
}
