package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HibernationSpec says when a hosted cluster's control plane sleeps: every
// process of it stops and its data stays (docs/hibernation.md). The cluster
// sleeps while enabled is true, inside a schedule's hibernate→resume
// window, or after idleAfter without a client request; a request to the
// published endpoint wakes an idle-hibernated cluster (and one asleep by
// schedule, when idleAfter is set).
type HibernationSpec struct {
	// enabled hibernates the cluster now, until it is set false.
	//
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// schedules are windows of sleep: the cluster hibernates at each
	// hibernate time and resumes at the next resume time. Each is a
	// standard 5-field cron expression (minute hour day-of-month month
	// day-of-week) or @yearly, @monthly, @weekly, @daily, @hourly,
	// evaluated in timeZone. The controller parses them fully; a bad one
	// makes ValidConfiguration False, naming it.
	//
	// +optional
	// +kubebuilder:validation:MaxItems=10
	// +listType=atomic
	Schedules []HibernationSchedule `json:"schedules,omitempty"`

	// timeZone is the IANA time zone the schedules are read in, such as
	// Europe/Berlin; empty means UTC. The controller checks it
	// (ValidConfiguration).
	//
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)*$')",message="spec.hibernation.timeZone must be an IANA time zone name such as UTC or Europe/Berlin"
	TimeZone string `json:"timeZone,omitempty"`

	// idleAfter hibernates the cluster once no client has used its API
	// endpoint for this long (at least 10s); the endpoint then stays up,
	// holds the next connection, wakes the control plane and passes the
	// connection through. Unset: no idle hibernation.
	//
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s')",message="spec.hibernation.idleAfter must be at least 10s, such as 30m"
	IdleAfter *metav1.Duration `json:"idleAfter,omitempty"`
}

// HibernationSchedule is one recurring window of sleep.
type HibernationSchedule struct {
	// hibernate is when the window starts (cron).
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|\\\\S+\\\\s+\\\\S+\\\\s+\\\\S+\\\\s+\\\\S+\\\\s+\\\\S+)$')",message="spec.hibernation.schedules[].hibernate must be a 5-field cron expression such as '0 20 * * 1-5', or @daily"
	Hibernate string `json:"hibernate"`
	// resume is when the window ends (cron).
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|\\\\S+\\\\s+\\\\S+\\\\s+\\\\S+\\\\s+\\\\S+\\\\s+\\\\S+)$')",message="spec.hibernation.schedules[].resume must be a 5-field cron expression such as '0 7 * * 1-5', or @daily"
	Resume string `json:"resume"`
}

// ControlPlaneHibernation is the HostedCluster controller's decision for a
// control plane.
type ControlPlaneHibernation struct {
	// hibernated: every process of the control plane stops (the endpoint
	// proxy stays when idleAfter is set); false: it runs.
	//
	// +optional
	Hibernated bool `json:"hibernated,omitempty"`
	// reason says why it sleeps: Hibernated (spec.hibernation.enabled),
	// ScheduledHibernation or IdleHibernated.
	//
	// +optional
	Reason ConditionReason `json:"reason,omitempty"`
	// idleAfter mirrors the HostedCluster's: the API endpoint is the
	// endpoint proxy, which counts client activity and wakes the control
	// plane on a request.
	//
	// +optional
	IdleAfter *metav1.Duration `json:"idleAfter,omitempty"`
}

// ControlPlaneActivity is what the endpoint proxy saw of clients.
type ControlPlaneActivity struct {
	// lastActivityTime is when a client last connected to the published
	// endpoint or sent or received bytes through it.
	//
	// +optional
	LastActivityTime *metav1.Time `json:"lastActivityTime,omitempty"`
	// waitingConnections counts connections the proxy holds while the
	// control plane sleeps: a wake request.
	//
	// +optional
	WaitingConnections int32 `json:"waitingConnections,omitempty"`
	// internalEndpoint is where the operator's controllers reach the API
	// server through the proxy without counting as a client (loopback).
	//
	// +optional
	InternalEndpoint *APIEndpoint `json:"internalEndpoint,omitempty"`
}

// Hibernation condition and reasons.
const (
	// Hibernated is True while the control plane sleeps (no process of it
	// runs), False otherwise; its reason says why, or that it is on its way
	// to sleep (Hibernating) or back (Resuming).
	Hibernated ConditionType = "Hibernated"

	// HibernatedReason: spec.hibernation.enabled.
	HibernatedReason ConditionReason = "Hibernated"
	// ScheduledHibernationReason: inside a window of spec.hibernation.schedules.
	ScheduledHibernationReason ConditionReason = "ScheduledHibernation"
	// IdleHibernatedReason: no client used the endpoint for spec.hibernation.idleAfter.
	IdleHibernatedReason ConditionReason = "IdleHibernated"
	// HibernatingReason: the control plane is stopping.
	HibernatingReason ConditionReason = "Hibernating"
	// ResumingReason: the control plane is starting again and not
	// Available yet.
	ResumingReason ConditionReason = "Resuming"
	// NotHibernatedReason: the control plane runs.
	NotHibernatedReason ConditionReason = "NotHibernated"
	// HostedClusterHibernatedReason (NodePool Ready): the pool's cluster
	// sleeps, and its simulated nodes with it.
	HostedClusterHibernatedReason ConditionReason = "HostedClusterHibernated"
)
