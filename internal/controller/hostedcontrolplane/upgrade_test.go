package hostedcontrolplane

import (
	"fmt"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

func TestRecordVersion(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Minute)
	completed := func(v string, at time.Time) hypershiftv1alpha1.VersionHistory {
		ts := metav1.NewTime(at)
		return hypershiftv1alpha1.VersionHistory{Version: v, State: hypershiftv1alpha1.CompletedVersion, StartedTime: ts, CompletionTime: &ts}
	}
	partial := func(v string, at time.Time) hypershiftv1alpha1.VersionHistory {
		return hypershiftv1alpha1.VersionHistory{Version: v, State: hypershiftv1alpha1.PartialVersion, StartedTime: metav1.NewTime(at)}
	}
	long := make([]hypershiftv1alpha1.VersionHistory, 0, hypershiftv1alpha1.MaxVersionHistory)
	for i := range hypershiftv1alpha1.MaxVersionHistory {
		long = append(long, completed(fmt.Sprintf("v1.%d.0", 36-i), t0))
	}
	tests := []struct {
		name                 string
		in                   []hypershiftv1alpha1.VersionHistory
		version              string
		done                 bool
		want                 []hypershiftv1alpha1.VersionHistory
		wantStart, wantCompl bool
	}{
		{name: "creation starts a Partial entry", version: "v1.37.1", want: []hypershiftv1alpha1.VersionHistory{partial("v1.37.1", t1)}, wantStart: true},
		{name: "created and done at once", version: "v1.37.1", done: true, want: []hypershiftv1alpha1.VersionHistory{completed("v1.37.1", t1)}, wantStart: true, wantCompl: true},
		{
			name: "in progress: unchanged", in: []hypershiftv1alpha1.VersionHistory{partial("v1.37.1", t0), completed("v1.36.3", t0)}, version: "v1.37.1",
			want: []hypershiftv1alpha1.VersionHistory{partial("v1.37.1", t0), completed("v1.36.3", t0)},
		},
		{
			name: "upgrade starts", in: []hypershiftv1alpha1.VersionHistory{completed("v1.36.3", t0)}, version: "v1.37.1",
			want: []hypershiftv1alpha1.VersionHistory{partial("v1.37.1", t1), completed("v1.36.3", t0)}, wantStart: true,
		},
		{
			name: "upgrade completes", in: []hypershiftv1alpha1.VersionHistory{partial("v1.37.1", t0), completed("v1.36.3", t0)}, version: "v1.37.1", done: true,
			want:      []hypershiftv1alpha1.VersionHistory{{Version: "v1.37.1", State: hypershiftv1alpha1.CompletedVersion, StartedTime: metav1.NewTime(t0), CompletionTime: ptrTime(t1)}, completed("v1.36.3", t0)},
			wantCompl: true,
		},
		{
			name: "completed stays as it was", in: []hypershiftv1alpha1.VersionHistory{completed("v1.37.1", t0)}, version: "v1.37.1", done: true,
			want: []hypershiftv1alpha1.VersionHistory{completed("v1.37.1", t0)},
		},
		{
			name: "a superseded rollout stays Partial", in: []hypershiftv1alpha1.VersionHistory{partial("v1.37.1", t0), completed("v1.36.3", t0)}, version: "v1.37.2",
			want: []hypershiftv1alpha1.VersionHistory{partial("v1.37.2", t1), partial("v1.37.1", t0), completed("v1.36.3", t0)}, wantStart: true,
		},
		{
			name: "capped at ten", in: long, version: "v1.37.1",
			want: append([]hypershiftv1alpha1.VersionHistory{partial("v1.37.1", t1)}, long[:hypershiftv1alpha1.MaxVersionHistory-1]...), wantStart: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, started, compl := recordVersion(tt.in, tt.version, tt.done, t1)
			if !apiequality.Semantic.DeepEqual(got, tt.want) || started != tt.wantStart || compl != tt.wantCompl {
				t.Errorf("got %v (started %v, completed %v)\nwant %v (started %v, completed %v)", got, started, compl, tt.want, tt.wantStart, tt.wantCompl)
			}
		})
	}
}

func ptrTime(t time.Time) *metav1.Time {
	m := metav1.NewTime(t)
	return &m
}
