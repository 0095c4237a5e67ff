package hostedcluster

import (
	"testing"
	"time"
)

func TestRenewalRequeueIsAtTheNextLeafDue(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := renewalRequeue(now.Add(time.Hour), now).RequeueAfter; got != time.Hour+time.Second {
		t.Errorf("requeue after %v, want a second after the leaf is due", got)
	}
	// Overdue (a failed renewal): soon, not in a tight loop.
	if got := renewalRequeue(now.Add(-time.Hour), now).RequeueAfter; got != time.Second {
		t.Errorf("overdue requeue after %v, want 1s", got)
	}
	if got := renewalRequeue(time.Time{}, now); !got.IsZero() {
		t.Errorf("no leaf: requeue %v, want none", got)
	}
}
