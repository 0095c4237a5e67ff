package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// StartQueueStatus is where a control plane waits for its turn to start:
// the operator starts at most a few control planes at once (the process
// runtime's --max-starting-control-planes) and queues the rest in the
// order they were created, so a burst of creates converges in waves
// instead of starving every start of CPU.
type StartQueueStatus struct {
	// position is this control plane's place in the queue, 1 being next.
	// +kubebuilder:validation:Minimum=1
	Position int32 `json:"position"`
	// length is how many control planes wait.
	// +kubebuilder:validation:Minimum=1
	Length int32 `json:"length"`
	// since is when this control plane was first queued.
	Since metav1.Time `json:"since"`
}

// QueuedReason is the reason of a control plane that waits for its turn
// to start (status.startQueue says where it stands).
const QueuedReason ConditionReason = "Queued"
