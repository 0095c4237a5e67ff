package workloadidentity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/go-logr/logr"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// MutatePath is where Run serves Handler; the webhook registration's
// clientConfig names it.
const MutatePath = "/mutate-v1-pod"

// MaxRequestBytes bounds an AdmissionReview's body. The API server decodes
// no object over 3 MiB, and a CREATE review carries the object once
// (no oldObject); the last MiB is for the review around it (user info,
// options).
const MaxRequestBytes = 4 << 20

// ServiceAccountGetter reads a ServiceAccount. Its error for one that does
// not exist must satisfy apierrors.IsNotFound.
type ServiceAccountGetter func(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)

var podKind = metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}

// Handler serves admission.k8s.io/v1 AdmissionReviews of pod creations: it
// reads the pod's ServiceAccount with getSA, applies Mutate with cfg, and
// answers with the JSONPatch between the pod it received and the mutated
// one. cfg is used as given (Run validates it first: Config.Validate).
//
// Every byte comes from a tenant (through the API server) and is checked:
// the body is bounded by MaxRequestBytes, anything but a v1 Pod is refused,
// and names are validated before they reach getSA.
//
// A pod whose ServiceAccount does not exist is allowed unchanged: the API
// server's ServiceAccount admission plugin, which runs before webhooks,
// already refuses such pods, so this is a ServiceAccount deleted since,
// and it grants nothing. (Upstream Azure refuses the pod; upstream AWS,
// reading from a cache, allows it unchanged.)
//
// A lookup that fails otherwise refuses the pod, as upstream Azure does and
// as the registration's failurePolicy: Fail would if the webhook were down:
// a pod whose ServiceAccount grants a cloud role must not start without it
// and fail later in a way that hides why. Its controller retries.
func Handler(getSA ServiceAccountGetter, cfg Config, log logr.Logger) http.Handler {
	return &handler{getSA: getSA, cfg: cfg, log: log}
}

type handler struct {
	getSA ServiceAccountGetter
	cfg   Config
	log   logr.Logger
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST an AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		http.Error(w, "Content-Type must be application/json", http.StatusUnsupportedMediaType)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			http.Error(w, fmt.Sprintf("AdmissionReview over %d bytes", MaxRequestBytes), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "read the AdmissionReview: "+err.Error(), http.StatusBadRequest)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil {
		http.Error(w, "decode the AdmissionReview: "+err.Error(), http.StatusBadRequest)
		return
	}
	if gvk := review.GroupVersionKind(); gvk != admissionv1.SchemeGroupVersion.WithKind("AdmissionReview") || review.Request == nil {
		http.Error(w, fmt.Sprintf("want an admission.k8s.io/v1 AdmissionReview with a request, got %s %q: register the webhook with admissionReviewVersions [v1]",
			gvk.GroupVersion(), gvk.Kind), http.StatusBadRequest)
		return
	}
	resp := h.admit(r.Context(), review.Request)
	resp.UID = review.Request.UID
	out, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp})
	if err != nil {
		http.Error(w, "encode the AdmissionReview: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// admit decides one request.
func (h *handler) admit(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if req.Kind != podKind || req.SubResource != "" {
		return deny(http.StatusBadRequest, fmt.Sprintf("this webhook admits v1 Pods only, got %s (subresource %s): limit the webhook registration's rules to pods, CREATE",
			quote(req.Kind.String()), quote(req.SubResource)))
	}
	if req.Operation != admissionv1.Create {
		// A pod's containers and volumes never change after creation:
		// nothing to give, and refusing would block every update.
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	if msgs := validation.IsDNS1123Label(req.Namespace); len(msgs) > 0 {
		return deny(http.StatusBadRequest, fmt.Sprintf("namespace %s: %s", quote(req.Namespace), strings.Join(msgs, "; ")))
	}
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		return deny(http.StatusBadRequest, "decode the pod: "+err.Error())
	}
	// The patch is computed against the pod as this package's API types
	// read it, not against the raw request, so a field newer than those
	// types is in neither document and left alone rather than removed.
	before, err := json.Marshal(&pod)
	if err != nil {
		return deny(http.StatusInternalServerError, "encode the pod: "+err.Error())
	}
	saName := pod.Spec.ServiceAccountName
	if saName == "" {
		// The API server's ServiceAccount plugin sets it before webhooks
		// run; an empty one means the same.
		saName = "default"
	}
	log := h.log.WithValues("namespace", req.Namespace, "pod", podName(&pod), "serviceAccount", saName)
	if msgs := validation.IsDNS1123Subdomain(saName); len(msgs) > 0 {
		return deny(http.StatusBadRequest, fmt.Sprintf("spec.serviceAccountName %s: %s", quote(saName), strings.Join(msgs, "; ")))
	}
	sa, err := h.getSA(ctx, req.Namespace, saName)
	switch {
	case apierrors.IsNotFound(err) || (err == nil && sa == nil):
		log.Info("ServiceAccount not found: pod admitted unchanged")
		return &admissionv1.AdmissionResponse{Allowed: true}
	case err != nil:
		log.Error(err, "ServiceAccount lookup failed: pod refused")
		return deny(http.StatusInternalServerError, fmt.Sprintf("look up ServiceAccount %s/%s to decide the pod's cloud credentials: %v; the pod is refused rather than started without them, retry",
			req.Namespace, saName, err))
	}
	res, err := Mutate(&pod, sa, h.cfg)
	if err != nil {
		log.Info("pod refused", "reason", err.Error())
		return deny(http.StatusBadRequest, err.Error())
	}
	resp := &admissionv1.AdmissionResponse{Allowed: true, Warnings: res.Warnings}
	if !res.Changed {
		return resp
	}
	after, err := json.Marshal(&pod)
	if err != nil {
		return deny(http.StatusInternalServerError, "encode the mutated pod: "+err.Error())
	}
	ops, err := jsonpatch.CreatePatch(before, after)
	if err != nil {
		return deny(http.StatusInternalServerError, "compute the pod's patch: "+err.Error())
	}
	if resp.Patch, err = json.Marshal(ops); err != nil {
		return deny(http.StatusInternalServerError, "encode the pod's patch: "+err.Error())
	}
	pt := admissionv1.PatchTypeJSONPatch
	resp.PatchType = &pt
	log.Info("credentials injected", "providers", res.Providers)
	return resp
}

// deny refuses the request with message, which the API server returns to
// the pod's creator.
func deny(code int32, message string) *admissionv1.AdmissionResponse {
	reason := metav1.StatusReasonBadRequest
	if code == http.StatusInternalServerError {
		reason = metav1.StatusReasonInternalError
	}
	return &admissionv1.AdmissionResponse{Result: &metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    code,
		Reason:  reason,
		Message: message,
	}}
}

// podName is the pod's name for logs: pods of controllers have only a
// generateName at admission.
func podName(pod *corev1.Pod) string {
	if pod.Name != "" {
		return pod.Name
	}
	return pod.GenerateName + "*"
}
