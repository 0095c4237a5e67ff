package hostedcluster_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/oidcissuer"
	"hypershift.dev/internal/operator"
	"hypershift.dev/internal/operator/operatortest"
	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/testenv"
)

// TestServiceAccountIssuer runs a cluster that brings its signing key and
// publishes its issuer to a file:// bucket served over HTTPS, as a bucket
// behind a web server is: its tokens are verified by go-oidc (what relying
// parties use) through the published documents alone; another cluster's
// token is refused; the documents follow the cluster's deletion.
func TestServiceAccountIssuer(t *testing.T) {
	env := testenv.Start(t)
	c := env.Client
	ctx := t.Context()
	fileRoot := filepath.Join(env.DataDir, "files")
	if err := os.MkdirAll(fileRoot, 0o700); err != nil {
		t.Fatal(err)
	}
	const retireAfter = 20 * time.Second
	operatortest.Start(t, env, filepath.Join(env.DataDir, "clusters"), func(o *operator.Options) {
		o.BackupFileRoot, o.ServiceAccountKeyRetireAfter = fileRoot, retireAfter
	})
	for _, ns := range []string{"clusters"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	// The issuers' web server serves the file:// bucket's directory, and
	// under /s3/ the objects of bucket oidc of an S3 server, as a CDN in
	// front of a bucket does.
	backend := s3mem.New()
	if err := backend.CreateBucket("oidc"); err != nil {
		t.Fatal(err)
	}
	s3 := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(s3.Close)
	s3URL, err := url.Parse(s3.URL)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir(fileRoot)))
	mux.Handle("/s3/", &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(s3URL)
		r.Out.URL.Path = "/oidc/" + strings.TrimPrefix(r.In.URL.Path, "/s3/")
	}})
	web := httptest.NewTLSServer(mux)
	t.Cleanup(web.Close)
	issuer := web.URL + "/oidc/a"
	storage := "file://" + filepath.Join(fileRoot, "oidc", "a")

	hc := &hypershiftv1alpha1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "issuer"}}
	hc.Spec.IssuerURL = issuer
	hc.Spec.ServiceAccountSigningKey = &corev1.LocalObjectReference{Name: "issuer-signing-key"}
	hc.Spec.OIDCPublishing = &hypershiftv1alpha1.OIDCPublishingSpec{StorageURL: storage}
	if err := c.Create(ctx, hc); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(hc)

	// Another cluster, made meanwhile, publishes to the S3 bucket with
	// the credentials of a Secret, and runs the workload-identity webhook.
	// Its tokens verify against its own issuer; against the first
	// cluster's they are refused, by issuer and, with the issuer check
	// off, by signature.
	if err := c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "oidc-bucket"},
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"},
	}); err != nil {
		t.Fatal(err)
	}
	otherIssuer := web.URL + "/s3/b"
	other := &hypershiftv1alpha1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "other"}}
	other.Spec.IssuerURL = otherIssuer
	other.Spec.OIDCPublishing = &hypershiftv1alpha1.OIDCPublishingSpec{
		StorageURL:        "s3://oidc/b?region=us-east-1&use_path_style=true&disable_https=true&endpoint=" + url.QueryEscape(s3.URL),
		CredentialsSecret: &corev1.LocalObjectReference{Name: "oidc-bucket"},
	}
	other.Spec.WorkloadIdentityWebhook = &hypershiftv1alpha1.WorkloadIdentityWebhookSpec{AzureTenantID: "tenant-of-other", AWSRegion: "eu-west-1"}
	if err := c.Create(ctx, other); err != nil {
		t.Fatal(err)
	}

	// Without its key the cluster waits, and says why.
	testenv.Eventually(t, time.Minute, "ValidOIDCConfiguration=False naming the missing Secret", func() (bool, error) {
		err := c.Get(ctx, key, hc)
		cond := meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.ValidOIDCConfiguration.String())
		return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == hypershiftv1alpha1.InvalidSigningKeyReason.String() &&
			strings.Contains(cond.Message, "spec.serviceAccountSigningKey: Secret clusters/issuer-signing-key does not exist"), err
	})
	if err := c.Get(ctx, client.ObjectKey{Namespace: "clusters-issuer", Name: pki.ServiceAccountKeyName}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the PKI was made without the key the cluster names: %v", err)
	}
	signer, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(signer)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "issuer-signing-key"},
		Data:       map[string][]byte{"key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})},
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, cond := range hc.Status.Conditions {
				t.Logf("%s=%s %s: %s", cond.Type, cond.Status, cond.Reason, cond.Message)
			}
		}
	})
	operatortest.WaitAvailable(t, c, hc)
	wantKID, err := oidcissuer.KeyID(&signer.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	if st := hc.Status.ServiceAccountIssuer; st == nil || st.IssuerURL != issuer || len(st.KeyIDs) != 1 || st.KeyIDs[0] != wantKID || st.StorageURL != storage || st.PublishedAt == nil {
		t.Errorf("status.serviceAccountIssuer %+v, want issuer %s, key id %s published to %s", st, issuer, wantKID, storage)
	}
	if !meta.IsStatusConditionTrue(hc.Status.Conditions, hypershiftv1alpha1.ValidOIDCConfiguration.String()) {
		t.Errorf("ValidOIDCConfiguration: %+v", meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.ValidOIDCConfiguration.String()))
	}

	// The published key set is the one the API server serves.
	hosted := hostedClient(ctx, t, c, hc)
	served, err := hosted.RESTClient().Get().AbsPath("/openid/v1/jwks").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, published, err := oidcissuer.Read(ctx, storage, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !sameJSON(t, served, published) {
		t.Errorf("the published key set differs from the API server's:\npublished %s\nserved    %s", published, served)
	}
	doc, err := hosted.RESTClient().Get().AbsPath("/.well-known/openid-configuration").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), `"jwks_uri":"`+issuer+`/openid/v1/jwks"`) {
		t.Errorf("the API server's discovery document does not name the published key set:\n%s", doc)
	}

	// A relying party verifies the cluster's token through the
	// published documents alone.
	verify := relyingParty(ctx, t, web, issuer, "sts.amazonaws.com")
	token := requestToken(ctx, t, hosted, "sts.amazonaws.com")
	idt, err := verify(token, false)
	if err != nil {
		t.Fatalf("a token of the cluster is refused: %v", err)
	}
	if idt.Subject != "system:serviceaccount:default:app" || idt.Issuer != issuer {
		t.Errorf("token subject %q, issuer %q", idt.Subject, idt.Issuer)
	}
	if _, err := verify(requestToken(ctx, t, hosted, "api://AzureADTokenExchange"), false); err == nil {
		t.Error("a token for another audience is accepted")
	}

	operatortest.WaitAvailable(t, c, other)
	otherHosted := hostedClient(ctx, t, c, other)
	if _, err := relyingParty(ctx, t, web, otherIssuer, "sts.amazonaws.com")(requestToken(ctx, t, otherHosted, "sts.amazonaws.com"), false); err != nil {
		t.Errorf("a token of the cluster that publishes to S3 is refused by its own issuer: %v", err)
	}
	t.Run("the workload-identity webhook injects what the providers' webhooks do, for annotated ServiceAccounts only", func(t *testing.T) {
		checkWorkloadIdentityWebhook(ctx, t, otherHosted)
	})
	foreign := requestToken(ctx, t, otherHosted, "sts.amazonaws.com")
	if _, err := verify(foreign, false); err == nil {
		t.Error("another cluster's token is accepted")
	}
	if _, err := verify(foreign, true); err == nil || !strings.Contains(err.Error(), "signature") {
		t.Errorf("another cluster's token with the issuer check off: %v, want a signature failure", err)
	}

	t.Run("a key rotation publishes the new key before it signs and retires the old one after", func(t *testing.T) {
		checkKeyRotation(ctx, t, c, hc, web, storage, token)
	})

	// Deleted, the cluster takes its documents along.
	if err := c.Delete(ctx, hc); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Minute, "HostedCluster gone", func() (bool, error) {
		err := c.Get(ctx, key, hc)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if _, _, err := oidcissuer.Read(ctx, storage, nil); !errors.Is(err, oidcissuer.ErrNotPublished) {
		t.Errorf("after deletion the documents read: %v, want them gone", err)
	}
}

// relyingParty verifies tokens as a relying party does: go-oidc
// discovering the issuer over HTTPS, checking issuer (unless
// skipIssuer), audience, expiry and signature.
func relyingParty(ctx context.Context, t *testing.T, web *httptest.Server, issuer, audience string) func(token string, skipIssuer bool) (*oidc.IDToken, error) {
	t.Helper()
	ctx = oidc.ClientContext(ctx, web.Client())
	provider, err := oidc.NewProvider(ctx, issuer)
	if err != nil {
		t.Fatalf("discover %s: %v", issuer, err)
	}
	return func(token string, skipIssuer bool) (*oidc.IDToken, error) {
		return provider.Verifier(&oidc.Config{ClientID: audience, SkipIssuerCheck: skipIssuer}).Verify(ctx, token)
	}
}

// requestToken is the token the kubelet asks for to project into a pod:
// of pod default/app (ServiceAccount app) for audience, bound to the pod.
// The pod is created once; with no node it stays Pending, which binding
// does not mind.
func requestToken(ctx context.Context, t *testing.T, hosted *kubernetes.Clientset, audience string) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"}}
	if _, err := hosted.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	var pod *corev1.Pod
	// A cluster's admission webhooks may still be starting: the pod is
	// admitted once they answer.
	testenv.Eventually(t, time.Minute, "pod default/app", func() (bool, error) {
		var err error
		pod, err = hosted.CoreV1().Pods("default").Get(ctx, "app", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			pod, err = hosted.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"},
				Spec:       corev1.PodSpec{ServiceAccountName: "app", Containers: []corev1.Container{{Name: "app", Image: "hypershift.test/hello:1"}}},
			}, metav1.CreateOptions{})
		}
		return err == nil, err
	})
	tr, err := hosted.CoreV1().ServiceAccounts("default").CreateToken(ctx, "app", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			Audiences: []string{audience}, ExpirationSeconds: ptr.To[int64](600),
			BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

// checkWorkloadIdentityWebhook creates pods of an AWS-annotated, an
// Azure-annotated and a plain ServiceAccount in a cluster that runs the
// webhook, and reads back what admission made of them.
func checkWorkloadIdentityWebhook(ctx context.Context, t *testing.T, hosted *kubernetes.Clientset) {
	const ns = "default"
	for name, annotations := range map[string]map[string]string{
		"aws-app":   {"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/app"},
		"azure-app": {"azure.workload.identity/client-id": "9b3f6d4e-1c2a-4b5c-8d7e-0f1a2b3c4d5e"},
		"plain":     nil,
	} {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations}}
		if _, err := hosted.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create := func(name, sa string, labels map[string]string) *corev1.Pod {
		t.Helper()
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec:       corev1.PodSpec{ServiceAccountName: sa, Containers: []corev1.Container{{Name: "app", Image: "hypershift.test/hello:1"}}},
		}
		var out *corev1.Pod
		// The registration and the webhook come up with the data plane.
		testenv.Eventually(t, time.Minute, "pod "+name+" admitted", func() (bool, error) {
			var err error
			if _, gerr := hosted.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "hypershift-workload-identity", metav1.GetOptions{}); gerr != nil {
				return false, nil //nolint:nilerr // not registered yet
			}
			out, err = hosted.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
			return err == nil, nil
		})
		return out
	}
	env := func(pod *corev1.Pod) map[string]string {
		m := map[string]string{}
		for _, e := range pod.Spec.Containers[0].Env {
			m[e.Name] = e.Value
		}
		return m
	}
	tokenVolume := func(pod *corev1.Pod, name string) *corev1.ServiceAccountTokenProjection {
		for _, v := range pod.Spec.Volumes {
			if v.Name == name && v.Projected != nil && len(v.Projected.Sources) == 1 {
				return v.Projected.Sources[0].ServiceAccountToken
			}
		}
		return nil
	}
	mounted := func(pod *corev1.Pod, volume, path string) bool {
		for _, m := range pod.Spec.Containers[0].VolumeMounts {
			if m.Name == volume && m.MountPath == path && m.ReadOnly {
				return true
			}
		}
		return false
	}

	aws := create("aws", "aws-app", nil)
	want := map[string]string{
		"AWS_ROLE_ARN":                "arn:aws:iam::123456789012:role/app",
		"AWS_WEB_IDENTITY_TOKEN_FILE": "/var/run/secrets/eks.amazonaws.com/serviceaccount/token",
		"AWS_REGION":                  "eu-west-1",
		"AWS_DEFAULT_REGION":          "eu-west-1",
	}
	if got := env(aws); !maps.Equal(got, want) {
		t.Errorf("AWS pod's environment %v, want %v", got, want)
	}
	if v := tokenVolume(aws, "aws-iam-token"); v == nil || v.Audience != "sts.amazonaws.com" || v.Path != "token" || v.ExpirationSeconds == nil || *v.ExpirationSeconds != 86400 {
		t.Errorf("AWS pod's token volume %+v, want audience sts.amazonaws.com, path token, 86400 s", v)
	}
	if !mounted(aws, "aws-iam-token", "/var/run/secrets/eks.amazonaws.com/serviceaccount") {
		t.Errorf("AWS pod's mounts %+v", aws.Spec.Containers[0].VolumeMounts)
	}

	azure := create("azure", "azure-app", map[string]string{"azure.workload.identity/use": "true"})
	want = map[string]string{
		"AZURE_CLIENT_ID":            "9b3f6d4e-1c2a-4b5c-8d7e-0f1a2b3c4d5e",
		"AZURE_TENANT_ID":            "tenant-of-other",
		"AZURE_FEDERATED_TOKEN_FILE": "/var/run/secrets/azure/tokens/azure-identity-token",
		"AZURE_AUTHORITY_HOST":       "https://login.microsoftonline.com/",
	}
	if got := env(azure); !maps.Equal(got, want) {
		t.Errorf("Azure pod's environment %v, want %v", got, want)
	}
	if v := tokenVolume(azure, "azure-identity-token"); v == nil || v.Audience != "api://AzureADTokenExchange" || v.Path != "azure-identity-token" {
		t.Errorf("Azure pod's token volume %+v, want audience api://AzureADTokenExchange", v)
	}
	if !mounted(azure, "azure-identity-token", "/var/run/secrets/azure/tokens") {
		t.Errorf("Azure pod's mounts %+v", azure.Spec.Containers[0].VolumeMounts)
	}

	// Only the API server may call it: another client of the host, with
	// no certificate of the cluster's client CA, is refused.
	mwc, err := hosted.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "hypershift-workload-identity", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(mwc.Webhooks[0].ClientConfig.CABundle)
	local := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	resp, err := local.Post(*mwc.Webhooks[0].ClientConfig.URL, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a local client without the API server's certificate got HTTP %d from the webhook, want 403", resp.StatusCode)
	}

	// Without the pod label an Azure ServiceAccount's pod gets nothing,
	// nor does a plain one's.
	for name, p := range map[string]*corev1.Pod{
		"unlabelled": create("unlabelled", "azure-app", nil),
		"plain":      create("plain", "plain", nil),
	} {
		if len(p.Spec.Containers[0].Env) > 0 || tokenVolume(p, "azure-identity-token") != nil || tokenVolume(p, "aws-iam-token") != nil {
			t.Errorf("%s pod was changed: env %v, volumes %+v", name, p.Spec.Containers[0].Env, p.Spec.Volumes)
		}
	}
}

// checkKeyRotation rotates the service-account key of hc, whose token
// old was signed before: old verifies until the old key is retired, a new
// token verifies with the new key, and the published key set follows each
// step. Each verification discovers the issuer anew, as a relying party
// whose cache has run out does.
func checkKeyRotation(ctx context.Context, t *testing.T, c client.Client, hc *hypershiftv1alpha1.HostedCluster, web *httptest.Server, storage, old string) {
	key := client.ObjectKeyFromObject(hc)
	oldKIDs := hc.Status.ServiceAccountIssuer.KeyIDs
	patch := client.MergeFrom(hc.DeepCopy())
	hc.Spec.Certificates = &hypershiftv1alpha1.CertificatesSpec{RotateServiceAccountKey: "r1"}
	if err := c.Patch(ctx, hc, patch); err != nil {
		t.Fatal(err)
	}
	published := func() []string {
		t.Helper()
		_, jwks, err := oidcissuer.Read(ctx, storage, nil)
		if err != nil {
			t.Fatal(err)
		}
		var set struct {
			Keys []struct {
				KID string `json:"kid"`
			} `json:"keys"`
		}
		if err := json.Unmarshal(jwks, &set); err != nil {
			t.Fatal(err)
		}
		var kids []string
		for _, k := range set.Keys {
			kids = append(kids, k.KID)
		}
		return kids
	}
	var st *hypershiftv1alpha1.ServiceAccountKeyRotationStatus
	testenv.Eventually(t, 3*time.Minute, "the new key to sign", func() (bool, error) {
		err := c.Get(ctx, key, hc)
		if hc.Status.Certificates != nil {
			st = hc.Status.Certificates.ServiceAccountKeyRotation
		}
		return st != nil && st.Phase == hypershiftv1alpha1.SAKeySignWithNew && st.RetireAt != nil, err
	})
	kids := hc.Status.ServiceAccountIssuer.KeyIDs
	if len(kids) != 2 || kids[1] != oldKIDs[0] || kids[0] == oldKIDs[0] {
		t.Fatalf("key ids while the new key signs: %v, want the new one and the old %s", kids, oldKIDs[0])
	}
	if got := published(); !slices.Equal(got, kids) {
		t.Errorf("published key ids %v, want %v", got, kids)
	}
	hosted := hostedClient(ctx, t, c, hc)
	fresh := requestToken(ctx, t, hosted, "sts.amazonaws.com")
	issuer := hc.Spec.IssuerURL
	for what, token := range map[string]string{"a token of the old key": old, "a token of the new key": fresh} {
		if _, err := relyingParty(ctx, t, web, issuer, "sts.amazonaws.com")(token, false); err != nil {
			t.Errorf("%s while both are published: %v", what, err)
		}
	}
	testenv.Eventually(t, retireAfterWait, "the rotation to be Done", func() (bool, error) {
		err := c.Get(ctx, key, hc)
		st = hc.Status.Certificates.ServiceAccountKeyRotation
		return st.Phase == hypershiftv1alpha1.SAKeyDone, err
	})
	testenv.Eventually(t, time.Minute, "the old key to leave the published set", func() (bool, error) {
		return slices.Equal(published(), kids[:1]), nil
	})
	if _, err := relyingParty(ctx, t, web, issuer, "sts.amazonaws.com")(old, false); err == nil {
		t.Error("a token of the retired key still verifies")
	}
	if _, err := relyingParty(ctx, t, web, issuer, "sts.amazonaws.com")(fresh, false); err != nil {
		t.Errorf("a token of the new key after the rotation: %v", err)
	}
	if cond := meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.ValidOIDCConfiguration.String()); cond == nil || cond.Status != metav1.ConditionTrue {
		t.Errorf("ValidOIDCConfiguration after the rotation of a key brought: %+v", cond)
	}
}

// retireAfterWait bounds the wait for Done: the shortened retirement and
// the API servers' restart without the old key.
const retireAfterWait = 2 * time.Minute
