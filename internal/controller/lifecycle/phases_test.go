package lifecycle

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestRunPhases(t *testing.T) {
	errBoom := errors.New("boom")
	step := func(res ctrl.Result, err error) func(context.Context, *[]string) (ctrl.Result, error) {
		return func(context.Context, *[]string) (ctrl.Result, error) { return res, err }
	}
	tests := []struct {
		name    string
		results []ctrl.Result
		errs    []error
		wantRan []string
		wantRes ctrl.Result
		wantErr string
	}{
		{
			name:    "all run in order",
			results: []ctrl.Result{{}, {}, {}},
			errs:    []error{nil, nil, nil},
			wantRan: []string{"a", "b", "c"},
		},
		{
			// Later phases use what earlier ones found: a requeue stops.
			name:    "a requeue stops the list",
			results: []ctrl.Result{{}, {RequeueAfter: time.Second}, {RequeueAfter: time.Millisecond}},
			errs:    []error{nil, nil, nil},
			wantRan: []string{"a", "b"},
			wantRes: ctrl.Result{RequeueAfter: time.Second},
		},
		{
			name:    "an error stops the list and names the phase",
			results: []ctrl.Result{{}, {}, {}},
			errs:    []error{nil, errBoom, nil},
			wantRan: []string{"a", "b"},
			wantErr: "b: boom",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var phases []Phase[*[]string]
			for i, name := range []string{"a", "b", "c"} {
				run := step(tc.results[i], tc.errs[i])
				phases = append(phases, Phase[*[]string]{Name: name, Run: func(ctx context.Context, ran *[]string) (ctrl.Result, error) {
					*ran = append(*ran, name)
					return run(ctx, ran)
				}})
			}
			var ran []string
			res, err := RunPhases(t.Context(), &ran, phases)
			if strings.Join(ran, ",") != strings.Join(tc.wantRan, ",") {
				t.Errorf("ran %v, want %v", ran, tc.wantRan)
			}
			if res != tc.wantRes {
				t.Errorf("result %+v, want %+v", res, tc.wantRes)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("error %v", err)
			case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr || !errors.Is(err, errBoom)):
				t.Errorf("error %v, want %q wrapping %v", err, tc.wantErr, errBoom)
			}
		})
	}
}

// A terminal error stays terminal through the phase's name, so the
// controller does not retry a spec that retrying cannot fix.
func TestRunPhasesKeepsTerminalErrors(t *testing.T) {
	_, err := RunPhases(t.Context(), struct{}{}, []Phase[struct{}]{{
		Name: "validate",
		Run: func(context.Context, struct{}) (ctrl.Result, error) {
			return ctrl.Result{}, reconcile.TerminalError(errors.New("unsupported"))
		},
	}})
	if !errors.Is(err, reconcile.TerminalError(nil)) {
		t.Fatalf("error %v is no longer terminal", err)
	}
}

func TestSoonest(t *testing.T) {
	tests := []struct {
		in   []ctrl.Result
		want time.Duration
	}{
		{nil, 0},
		{[]ctrl.Result{{}, {}}, 0},
		{[]ctrl.Result{{RequeueAfter: time.Minute}, {}}, time.Minute},
		{[]ctrl.Result{{}, {RequeueAfter: time.Minute}, {RequeueAfter: time.Second}}, time.Second},
		{[]ctrl.Result{{RequeueAfter: time.Second}, {RequeueAfter: time.Minute}}, time.Second},
	}
	for _, tc := range tests {
		if got := Soonest(tc.in...); got.RequeueAfter != tc.want {
			t.Errorf("Soonest(%+v) = %s, want %s", tc.in, got.RequeueAfter, tc.want)
		}
	}
}
