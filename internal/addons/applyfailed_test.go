package addons

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A management-side kind the operator's ClusterRole lacks holds the rollout
// with a message that says so and where the allowed kinds are listed; the
// same refusal in the hosted cluster (the connector's rules) does not.
func TestApplyFailedNamesTheOperatorsRBAC(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "batch", Resource: "cronjobs"}, "nightly", errors.New("RBAC: access denied"))
	const object = "CronJob clusters-a/nightly (management cluster)"
	h := applyFailed("deploy", object, false, forbidden)
	if h.Reason != "ApplyFailed" || h.Phase != "deploy" || h.Object != object {
		t.Fatalf("hold %+v", h)
	}
	for _, want := range []string{object, "the operator may not apply this kind in the management cluster", "Management-side kinds", "access denied"} {
		if !strings.Contains(h.Message, want) {
			t.Errorf("message %q lacks %q", h.Message, want)
		}
	}
	if h := applyFailed("configure", "CronJob extra/nightly (hosted cluster)", true, forbidden); strings.Contains(h.Message, "the operator may not apply") {
		t.Errorf("a refusal in the hosted cluster blames the operator's ClusterRole: %q", h.Message)
	}
	if h := applyFailed("deploy", object, false, errors.New("conflict")); strings.Contains(h.Message, "may not apply") {
		t.Errorf("an error other than Forbidden blames the operator's ClusterRole: %q", h.Message)
	}
}
