package workloadidentity

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	applypatch "github.com/evanphx/json-patch/v5"
	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// rawPod is a pod as the API server sends it at CREATE, from a ReplicaSet
// (generateName, no name), with a field newer than our API types.
const rawPod = `{
  "kind": "Pod", "apiVersion": "v1",
  "metadata": {"generateName": "web-7c9f-", "namespace": "tenant", "labels": {"app": "web"}},
  "spec": {
    "serviceAccountName": "app",
    "futureField": {"keep": "me"},
    "volumes": [{"name": "kube-api-access-x", "projected": {"sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}}]}}],
    "initContainers": [{"name": "init", "image": "busybox"}],
    "containers": [{"name": "app", "image": "nginx", "env": [{"name": "AWS_REGION", "value": "us-east-2"}],
      "volumeMounts": [{"name": "kube-api-access-x", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}]}]
  }
}`

// review wraps object in an AdmissionReview of kind (a v1 Pod CREATE in
// namespace tenant unless changed).
func review(object string, mods ...func(*admissionv1.AdmissionRequest)) []byte {
	req := &admissionv1.AdmissionRequest{
		UID:       "705ab4f5-6393-11e8-b7cc-42010a800002",
		Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Namespace: "tenant",
		Operation: admissionv1.Create,
	}
	req.Object.Raw = []byte(object)
	for _, m := range mods {
		m(req)
	}
	b, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
	if err != nil {
		panic(err)
	}
	return b
}

// saGetter serves the ServiceAccounts in sas by namespace/name, records
// what it was asked, and fails with err when set.
type saGetter struct {
	sas   map[string]*corev1.ServiceAccount
	err   error
	asked []string
}

func (g *saGetter) get(_ context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	g.asked = append(g.asked, namespace+"/"+name)
	if g.err != nil {
		return nil, g.err
	}
	if sa, ok := g.sas[namespace+"/"+name]; ok {
		return sa.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "serviceaccounts"}, name)
}

func awsGetter() *saGetter {
	return &saGetter{sas: map[string]*corev1.ServiceAccount{
		"tenant/app": testSA(map[string]string{"eks.amazonaws.com/role-arn": testRoleARN}),
	}}
}

// post sends body to a Handler over HTTP and decodes the review it answers.
func post(t *testing.T, g *saGetter, body []byte) *admissionv1.AdmissionResponse {
	t.Helper()
	srv := httptest.NewServer(Handler(g.get, Config{AWS: AWSConfig{Region: "eu-west-1"}}, logr.Discard()))
	t.Cleanup(srv.Close)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+MutatePath, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200 and a review", resp.StatusCode)
	}
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.Response == nil || out.Response.UID != "705ab4f5-6393-11e8-b7cc-42010a800002" || out.Kind != "AdmissionReview" {
		t.Fatalf("review %+v: want a response to the request's UID", out)
	}
	return out.Response
}

// apiServerReview is rawPod's CREATE as the API server sends it, every
// field of the request set.
const apiServerReview = `{
  "kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
  "request": {
    "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
    "kind": {"group": "", "version": "v1", "kind": "Pod"},
    "resource": {"group": "", "version": "v1", "resource": "pods"},
    "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
    "requestResource": {"group": "", "version": "v1", "resource": "pods"},
    "namespace": "tenant", "operation": "CREATE",
    "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller", "uid": "b8b2", "groups": ["system:serviceaccounts", "system:authenticated"]},
    "object": ` + rawPod + `,
    "oldObject": null, "dryRun": false,
    "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
  }
}`

// TestHandlerPatch: the patch, applied to the pod the API server sent,
// gives the mutated pod — and keeps the field the handler cannot read.
func TestHandlerPatch(t *testing.T) {
	resp := post(t, awsGetter(), []byte(apiServerReview))
	if resp == nil || !resp.Allowed || resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		t.Fatalf("response %+v: want allowed with a JSONPatch", resp)
	}
	patch, err := applypatch.DecodePatch(resp.Patch)
	if err != nil {
		t.Fatalf("patch %s: %v", resp.Patch, err)
	}
	patched, err := patch.Apply([]byte(rawPod))
	if err != nil {
		t.Fatalf("apply %s: %v", resp.Patch, err)
	}
	var raw map[string]any
	if err := json.Unmarshal(patched, &raw); err != nil {
		t.Fatal(err)
	}
	if future := raw["spec"].(map[string]any)["futureField"]; fmt.Sprint(future) != "map[keep:me]" {
		t.Errorf("spec.futureField is %v after the patch %s: want it kept", future, resp.Patch)
	}
	var got corev1.Pod
	if err := json.Unmarshal(patched, &got); err != nil {
		t.Fatal(err)
	}
	// Expected: the same pod mutated directly.
	var want corev1.Pod
	if err := json.Unmarshal([]byte(rawPod), &want); err != nil {
		t.Fatal(err)
	}
	if _, err := Mutate(&want, testSA(map[string]string{"eks.amazonaws.com/role-arn": testRoleARN}), Config{AWS: AWSConfig{Region: "eu-west-1"}}); err != nil {
		t.Fatal(err)
	}
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(want)
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Errorf("patched pod\n%s\nwant\n%s", gotJSON, wantJSON)
	}
	// Spot checks against the contract, not only against Mutate.
	app := got.Spec.Containers[0]
	if e := env(app); e[awsRoleARNEnv] != testRoleARN || e[awsWebIdentityTokenFileEnv] != awsTokenPath || e[awsRegionEnv] != "us-east-2" || countEnv(app, awsDefaultRegionEnv) != 0 {
		t.Errorf("container env %v", e)
	}
	if len(got.Spec.Volumes) != 2 || got.Spec.Volumes[0].Name != "kube-api-access-x" || got.Spec.Volumes[1].Name != AWSTokenVolume {
		t.Errorf("volumes %+v", got.Spec.Volumes)
	}
}

func TestHandlerAdmission(t *testing.T) {
	for _, tc := range []struct {
		name        string
		getter      *saGetter
		body        []byte
		wantAllowed bool
		wantPatch   bool
		wantCode    int32
		wantMessage string
		wantWarning string
		wantAsked   string // "" : the getter must not be called
	}{
		{
			name: "ServiceAccount missing: allowed unchanged", getter: &saGetter{}, body: review(rawPod),
			wantAllowed: true, wantAsked: "tenant/app",
		},
		{
			name:   "ServiceAccount lookup fails: refused, naming it",
			getter: &saGetter{err: errors.New("connection refused")}, body: review(rawPod),
			wantCode: 500, wantMessage: "look up ServiceAccount tenant/app to decide the pod's cloud credentials: connection refused", wantAsked: "tenant/app",
		},
		{
			name:   "unannotated ServiceAccount: allowed, no patch",
			getter: &saGetter{sas: map[string]*corev1.ServiceAccount{"tenant/app": testSA(nil)}}, body: review(rawPod),
			wantAllowed: true, wantAsked: "tenant/app",
		},
		{
			name:        "no serviceAccountName: the default ServiceAccount",
			getter:      &saGetter{sas: map[string]*corev1.ServiceAccount{"tenant/default": testSA(map[string]string{"eks.amazonaws.com/role-arn": testRoleARN})}},
			body:        review(strings.Replace(rawPod, `"serviceAccountName": "app",`, "", 1)),
			wantAllowed: true, wantPatch: true, wantAsked: "tenant/default",
		},
		{
			name:     "annotation upstream refuses: refused, naming it",
			getter:   &saGetter{sas: map[string]*corev1.ServiceAccount{"tenant/app": testSA(map[string]string{AzureTokenExpirationAnnotation: "60"})}},
			body:     review(strings.Replace(rawPod, `"labels": {"app": "web"}`, `"labels": {"azure.workload.identity/use": "true"}`, 1)),
			wantCode: 400, wantMessage: `azure.workload.identity/service-account-token-expiration is "60"`, wantAsked: "tenant/app",
		},
		{
			name:        "warnings reach the pod's creator",
			getter:      &saGetter{sas: map[string]*corev1.ServiceAccount{"tenant/app": testSA(map[string]string{"eks.amazonaws.com/role-arn": "reader"})}},
			body:        review(rawPod),
			wantAllowed: true, wantPatch: true, wantWarning: "not an IAM role ARN", wantAsked: "tenant/app",
		},
		{
			name: "not a pod: refused", getter: awsGetter(),
			body: review(`{"kind":"Deployment","apiVersion":"apps/v1"}`, func(r *admissionv1.AdmissionRequest) {
				r.Kind = metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
			}),
			wantCode: 400, wantMessage: "admits v1 Pods only",
		},
		{
			name: "pod subresource: refused", getter: awsGetter(),
			body:     review(`{"kind":"Pod","apiVersion":"v1"}`, func(r *admissionv1.AdmissionRequest) { r.SubResource = "ephemeralcontainers" }),
			wantCode: 400, wantMessage: "admits v1 Pods only",
		},
		{
			name: "pod update: allowed unchanged, nothing looked up", getter: awsGetter(),
			body:        review(rawPod, func(r *admissionv1.AdmissionRequest) { r.Operation = admissionv1.Update }),
			wantAllowed: true,
		},
		{
			name: "invalid ServiceAccount name: refused before any lookup", getter: awsGetter(),
			body:     review(strings.Replace(rawPod, `"serviceAccountName": "app"`, `"serviceAccountName": "../secrets/x"`, 1)),
			wantCode: 400, wantMessage: "spec.serviceAccountName",
		},
		{
			name: "invalid namespace: refused before any lookup", getter: awsGetter(),
			body:     review(rawPod, func(r *admissionv1.AdmissionRequest) { r.Namespace = "Tenant/../kube-system" }),
			wantCode: 400, wantMessage: "namespace",
		},
		{
			name: "pod that does not decode: refused", getter: awsGetter(),
			body:     review(`{"spec": {"containers": "nginx"}}`),
			wantCode: 400, wantMessage: "decode the pod",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, tc.getter, tc.body)
			if resp.Allowed != tc.wantAllowed || (len(resp.Patch) > 0) != tc.wantPatch {
				t.Errorf("allowed %v, patch %s: want allowed %v, a patch %v", resp.Allowed, resp.Patch, tc.wantAllowed, tc.wantPatch)
			}
			if !tc.wantAllowed && (resp.Result == nil || resp.Result.Code != tc.wantCode || !strings.Contains(resp.Result.Message, tc.wantMessage)) {
				t.Errorf("result %+v: want code %d and a message containing %q", resp.Result, tc.wantCode, tc.wantMessage)
			}
			if tc.wantWarning != "" && !strings.Contains(strings.Join(resp.Warnings, "\n"), tc.wantWarning) {
				t.Errorf("warnings %q: want one containing %q", resp.Warnings, tc.wantWarning)
			}
			if asked := strings.Join(tc.getter.asked, ","); asked != tc.wantAsked {
				t.Errorf("looked up %q, want %q", asked, tc.wantAsked)
			}
		})
	}
}

func TestHandlerRefusesTransport(t *testing.T) {
	huge := review(`{"kind":"Pod","apiVersion":"v1","metadata":{"annotations":{"x":"` + strings.Repeat("a", MaxRequestBytes) + `"}}}`)
	for _, tc := range []struct {
		name        string
		body        []byte
		contentType string
		want        int
	}{
		{name: "body over the bound", body: huge, contentType: "application/json", want: http.StatusRequestEntityTooLarge},
		{name: "not JSON", body: []byte("apiVersion: admission.k8s.io/v1"), contentType: "application/yaml", want: http.StatusUnsupportedMediaType},
		{name: "JSON that is not a review", body: []byte(`{"kind":`), contentType: "application/json", want: http.StatusBadRequest},
		{name: "v1beta1 review", body: bytes.Replace(review(rawPod), []byte("admission.k8s.io/v1"), []byte("admission.k8s.io/v1beta1"), 1), contentType: "application/json", want: http.StatusBadRequest},
		{name: "review without a request", body: []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`), contentType: "application/json", want: http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A recorder, not a connection: a server may answer 413 before
			// the client has written the whole body, and the client may then
			// see the broken write rather than the answer.
			g := awsGetter()
			rec := httptest.NewRecorder()
			req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, MutatePath, bytes.NewReader(tc.body))
			req.Header.Set("Content-Type", tc.contentType)
			Handler(g.get, Config{}, logr.Discard()).ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Errorf("status %d (%s), want %d", rec.Code, strings.TrimSpace(rec.Body.String()), tc.want)
			}
			if len(g.asked) > 0 {
				t.Errorf("looked up %q for a refused request", g.asked)
			}
		})
	}
	t.Run("GET", func(t *testing.T) {
		rec := httptest.NewRecorder()
		Handler(awsGetter().get, Config{}, logr.Discard()).ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, MutatePath, nil))
		if rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("status %d, want 405", rec.Code)
		}
	})
}

// FuzzHandler: no body, however hostile, makes the handler panic; every
// answer is a status or an AdmissionReview with a response.
func FuzzHandler(f *testing.F) {
	for _, seed := range []string{
		string(review(rawPod)),
		string(review(`null`)),
		string(review(`{"spec":null,"metadata":null}`)),
		string(review(`{"metadata":{"labels":{"azure.workload.identity/use":"true"},"annotations":null},"spec":{"containers":[null,{}],"initContainers":null,"volumes":[null,{"projected":null},{"projected":{"sources":[null,{"serviceAccountToken":null}]}}]}}`)),
		string(review(`{"metadata":{"annotations":{"eks.amazonaws.com/skip-containers":"\"","eks.amazonaws.com/token-expiration":"-9223372036854775808"}},"spec":{"containers":[{"env":[null,{"name":"AWS_ROLE_ARN","valueFrom":null}]}]}}`)),
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"kind":{"version":"v1","kind":"Pod"},"operation":"CREATE","namespace":"tenant","object":[]}}`,
		`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":null}`,
		`[]`, `""`, ``,
	} {
		f.Add([]byte(seed))
	}
	getter := &saGetter{sas: map[string]*corev1.ServiceAccount{
		"tenant/app":     testSA(map[string]string{"eks.amazonaws.com/role-arn": testRoleARN, AzureClientIDAnnotation: "id"}),
		"tenant/default": testSA(map[string]string{"eks.amazonaws.com/role-arn": testRoleARN, AzureClientIDAnnotation: "id"}),
	}}
	h := Handler(getter.get, Config{}, logr.Discard())
	f.Fuzz(func(t *testing.T, body []byte) {
		getter.asked = nil
		rec := httptest.NewRecorder()
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, MutatePath, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			return
		}
		var out admissionv1.AdmissionReview
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
			t.Fatalf("200 without a review response: %s", rec.Body)
		}
	})
}
