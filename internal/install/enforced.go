package install

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// probeVersion is a Kubernetes version no installation has.
const probeVersion = "v1.0.0"

// WaitPoliciesEnforced waits until the API server enforces the admission
// policies just applied for runtime and versions. An API server takes a
// policy into account only once its informers have it and its policy source
// has recompiled the set (about a second after the write); until then it
// admits what the policy refuses. The probe is a dry-run create of a
// HostedCluster at a version no installation has, otherwise valid for the
// runtime: the runtime policy refuses it naming the versions it admits, so
// the answer shows that the runtime policy of these versions is in force.
// That policy is applied last (ObjectsFor) and the API server recompiles
// every policy and binding from its informers together, so every one
// applied before it is in force too. It needs create on HostedClusters in
// the default namespace (nothing is stored).
func WaitPoliciesEnforced(ctx context.Context, c client.Client, runtime string, versions []string) error {
	opts := Options{Runtime: runtime, Versions: versions}.withDefaults()
	probe := hypershiftv1alpha1.NewHostedCluster(metav1.NamespaceDefault, "policy-probe", hypershiftv1alpha1.NonePlatform, probeVersion)
	if opts.Runtime == RuntimeKube {
		probe.Spec.Services[0].ServicePublishingStrategy = hypershiftv1alpha1.ServicePublishingStrategy{
			Type:     hypershiftv1alpha1.NodePort,
			NodePort: &hypershiftv1alpha1.NodePortPublishingStrategy{Address: "192.0.2.1"},
		}
	}
	want := probeVersion + " is not available in this installation: use one of " + strings.Join(opts.Versions, ", ") + " ("
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		switch {
		case ctx.Err() != nil:
			// Keep what the last answer said.
		case err == nil:
			lastErr = fmt.Errorf("a dry-run create at %s was admitted", probeVersion)
		case strings.Contains(err.Error(), want):
			return true, nil
		default:
			lastErr = err
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("the admission policies are not enforced: %w", errors.Join(err, lastErr))
	}
	return nil
}
