package addons

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A management-side object the namespace's ServiceAccount may not write
// holds the rollout with a message that names the account and how to grant
// it; the same refusal in the hosted cluster (the connector's rules) does
// not.
func TestApplyFailedNamesTheServiceAccount(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "batch", Resource: "cronjobs"}, "nightly", errors.New("RBAC: access denied"))
	const object = "CronJob clusters-a/nightly (management cluster)"
	h := applyFailed("deploy", object, "clusters-a", false, forbidden)
	if h.Reason != "ApplyFailed" || h.Phase != "deploy" || h.Object != object {
		t.Fatalf("hold %+v", h)
	}
	for _, want := range []string{object, "applied as ServiceAccount clusters-a/hypershift-addons", "create rolebinding hypershift-addons", "access denied"} {
		if !strings.Contains(h.Message, want) {
			t.Errorf("message %q lacks %q", h.Message, want)
		}
	}
	if h := applyFailed("configure", "CronJob extra/nightly (hosted cluster)", "clusters-a", true, forbidden); strings.Contains(h.Message, "ServiceAccount") {
		t.Errorf("a refusal in the hosted cluster blames the management-side ServiceAccount: %q", h.Message)
	}
	if h := applyFailed("deploy", object, "clusters-a", false, errors.New("conflict")); strings.Contains(h.Message, "ServiceAccount") {
		t.Errorf("an error other than Forbidden blames the ServiceAccount: %q", h.Message)
	}
}
