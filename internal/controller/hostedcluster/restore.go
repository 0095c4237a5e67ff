package hostedcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/backup"
	"hypershift.dev/internal/components"
	"hypershift.dev/internal/controller/conditions"
	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/runtime"
)

// Annotations of the restored root CA Secret: the Restored condition the
// restore reported (the endpoint kept or not).
const (
	restoredReasonAnnotation  = "hypershift.dev/restored-reason"
	restoredMessageAnnotation = "hypershift.dev/restored-message"
	// restoredCARotationAnnotation holds the archive's CA-rotation status
	// (JSON), for a pass whose status write was lost.
	restoredCARotationAnnotation = "hypershift.dev/restored-ca-rotation"
)

// restoreRetry is how soon a failed restore is tried again (a bucket that
// was down, a Secret made late).
const restoreRetry = 10 * time.Second

// reconcileRestore runs before the PKI phase for a cluster marked for
// restore: it writes the archive's PKI Secrets and encryption key (same CAs,
// service-account key and encryption key, so saved kubeconfigs and tokens
// keep working) and pins the archive's API port when it is free. The etcd
// data follows in the HostedControlPlane controller, before etcd first
// starts. Until the PKI is there the later phases wait: a fresh PKI would
// lock out every saved credential.
func (r *Reconciler) reconcileRestore(ctx context.Context, s *scope) (ctrl.Result, error) {
	hc := s.hc
	req, err := hypershiftv1alpha1.RestoreRequestOf(hc.Annotations)
	if req == nil && err == nil {
		return ctrl.Result{}, nil
	}
	if conditions.IsTrue(hc.Status.Conditions, hypershiftv1alpha1.Restored) {
		return ctrl.Result{}, nil
	}
	if err == nil {
		err = backup.CheckArchiveURL(req.URL, r.BackupFileRoot, !r.capabilities().HostFiles)
	}
	if err == nil {
		err = r.restoreState(ctx, s, req)
	}
	if err != nil {
		conditions.Set(&hc.Status.Conditions, hc.Generation, hypershiftv1alpha1.Restored, false,
			hypershiftv1alpha1.RestoreFailedReason, err.Error())
		ctrl.LoggerFrom(ctx).Error(err, "restore failed")
		if f := (*reasonedError)(nil); errors.As(err, &f) && f.reason == hypershiftv1alpha1.EncryptionKeyMissingReason {
			// `restore cluster` makes the Secret right after the cluster.
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		return ctrl.Result{RequeueAfter: restoreRetry}, nil
	}
	return ctrl.Result{}, nil
}

func (r *Reconciler) restoreState(ctx context.Context, s *scope, req *hypershiftv1alpha1.RestoreRequest) error {
	hc := s.hc
	root := &corev1.Secret{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: pki.RootCAName}, root)
	if err == nil {
		return restoredEarlier(s, root, req)
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	key, creds, err := requestSecret(ctx, r.Client, hc.Namespace, req.Secret)
	if err != nil {
		return err
	}
	fetchCtx, cancel := context.WithTimeout(ctx, backup.FetchTimeout)
	defer cancel()
	a, err := backup.Fetch(fetchCtx, req.URL, key, creds)
	if err != nil {
		return err
	}
	// Checked before anything is written.
	rootEntry, entries, err := archivedKeyPairs(a.Files)
	if err != nil {
		return fmt.Errorf("archive %s: %w", req.URL, err)
	}
	msg := "PKI and encryption key restored from " + req.URL
	reason := hypershiftv1alpha1.AsExpectedReason
	if changed := r.pinEndpoint(ctx, s, a.Manifest.Endpoint); changed != "" {
		msg += "; " + changed
		reason = hypershiftv1alpha1.RestoreEndpointChangedReason
	}
	// The encryption key and every PKI Secret but the root CA first: the
	// root CA is the mark that the restore is complete.
	if err := r.createRestored(ctx, s, pki.EncryptionKeyName, corev1.SecretTypeOpaque, map[string][]byte{"key": a.Files[backup.EncryptionKeyEntry]}); err != nil {
		return err
	}
	for name, sec := range entries {
		if err := r.createRestored(ctx, s, name, sec.Type, sec.Data); err != nil {
			return err
		}
	}
	annotations := []string{restoredReasonAnnotation, string(reason), restoredMessageAnnotation, msg}
	rotation, err := restoredCARotation(a.Files[backup.HostedClusterEntry], hc)
	if err != nil {
		return fmt.Errorf("archive %s: %w", req.URL, err)
	}
	if rotation != nil {
		raw, err := json.Marshal(rotation)
		if err != nil {
			return err
		}
		annotations = append(annotations, restoredCARotationAnnotation, string(raw))
	}
	if err := r.createRestored(ctx, s, pki.RootCAName, rootEntry.Type, rootEntry.Data, annotations...); err != nil {
		return err
	}
	if rotation != nil {
		setCARotation(hc, rotation)
	}
	conditions.Set(&s.hc.Status.Conditions, s.hc.Generation, hypershiftv1alpha1.Restored, true, reason, msg)
	ctrl.LoggerFrom(ctx).Info("restored PKI and encryption key", "url", req.URL, "archive", a.Manifest.Cluster, "created", a.Manifest.Created)
	return nil
}

// archivedKeyPairs are the PKI Secrets of an archive's files: the root CA
// (the mark of a complete restore, written last) and the others by name.
// Whoever made the archive chose its entries, so only the key pairs a
// control plane's PKI keeps (pki.IsKeyPairName), of type kubernetes.io/tls,
// are accepted: an entry of another name or type — the operator's own
// kubeconfig Secret, the runtime's file Secrets — refuses the archive.
func archivedKeyPairs(files map[string][]byte) (*archivedSecret, map[string]*archivedSecret, error) {
	var root *archivedSecret
	others := map[string]*archivedSecret{}
	for entry, data := range files {
		name, ok := strings.CutPrefix(entry, backup.SecretPrefix)
		if !ok {
			continue
		}
		name = strings.TrimSuffix(name, ".json")
		if !pki.IsKeyPairName(name) {
			return nil, nil, fmt.Errorf("entry %s is not a key pair of a control plane's PKI: refusing the archive", entry)
		}
		sec := &archivedSecret{}
		if err := json.Unmarshal(data, sec); err != nil {
			return nil, nil, fmt.Errorf("entry %s: %w", entry, err)
		}
		if sec.Type != corev1.SecretTypeTLS {
			return nil, nil, fmt.Errorf("entry %s has type %q, not %s: refusing the archive", entry, sec.Type, corev1.SecretTypeTLS)
		}
		if name == pki.RootCAName {
			root = sec
			continue
		}
		others[name] = sec
	}
	if root == nil {
		return nil, nil, fmt.Errorf("no %s%s.json", backup.SecretPrefix, pki.RootCAName)
	}
	return root, others, nil
}

// restoredEarlier reports a restore an earlier pass made, from the root CA
// Secret it wrote last: a status read from a cache behind that pass's
// patch must not lose what it found (the condition, the CA rotation).
func restoredEarlier(s *scope, root *corev1.Secret, req *hypershiftv1alpha1.RestoreRequest) error {
	hc := s.hc
	if err := s.verifyOwner("Secret", root.Name, root.Labels); err != nil {
		return err
	}
	reason, msg := hypershiftv1alpha1.ConditionReason(root.Annotations[restoredReasonAnnotation]), root.Annotations[restoredMessageAnnotation]
	if reason == "" || msg == "" {
		reason, msg = hypershiftv1alpha1.AsExpectedReason, "PKI and encryption key restored from "+req.URL
	}
	conditions.Set(&hc.Status.Conditions, hc.Generation, hypershiftv1alpha1.Restored, true, reason, msg)
	if raw := root.Annotations[restoredCARotationAnnotation]; raw != "" && caRotationOf(hc) == nil {
		st := &hypershiftv1alpha1.CARotationStatus{}
		if err := json.Unmarshal([]byte(raw), st); err != nil {
			return fmt.Errorf("annotation %s of Secret %s: %w", restoredCARotationAnnotation, root.Name, err)
		}
		setCARotation(hc, st)
	}
	return nil
}

// createRestored creates one Secret of the archive in the control-plane
// namespace, labelled as this cluster's; one left by an interrupted pass
// must be this cluster's too.
func (r *Reconciler) createRestored(ctx context.Context, s *scope, name string, typ corev1.SecretType, data map[string][]byte, annotations ...string) error {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name, Labels: s.labels()},
		Type:       typ,
		Data:       data,
	}
	for i := 0; i+1 < len(annotations); i += 2 {
		metav1.SetMetaDataAnnotation(&secret.ObjectMeta, annotations[i], annotations[i+1])
	}
	err := r.Client.Create(ctx, secret)
	if apierrors.IsAlreadyExists(err) {
		existing := &corev1.Secret{}
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(secret), existing); err != nil {
			return fmt.Errorf("restore Secret %s/%s: %w", s.ns, name, err)
		}
		if err := s.verifyOwner("Secret", name, existing.Labels); err != nil {
			return err
		}
		existing.Data, existing.Type = data, typ
		for k, v := range secret.Annotations {
			metav1.SetMetaDataAnnotation(&existing.ObjectMeta, k, v)
		}
		err = r.Client.Update(ctx, existing)
	}
	if err != nil {
		return fmt.Errorf("restore Secret %s/%s: %w", s.ns, name, err)
	}
	return nil
}

// pinEndpoint gives the restored control plane the archive's API port when
// the runtime can pin ports and the port is free; it returns what clients
// must know when the endpoint changes ("" when it does not).
func (r *Reconciler) pinEndpoint(ctx context.Context, s *scope, endpoint string) string {
	if endpoint == "" {
		return ""
	}
	_, portText, err := net.SplitHostPort(endpoint)
	if err != nil {
		return ""
	}
	port, _ := strconv.Atoi(portText)
	changed := fmt.Sprintf("the API endpoint %s of the archive is not kept (%%s): saved kubeconfigs must take the new server address from Secret %s/%s",
		endpoint, s.hc.Namespace, AdminKubeconfigSecretName(s.hc))
	if r.Runtime == nil {
		return fmt.Sprintf(changed, "no runtime")
	}
	// On one host the port must be free here; a runtime of pods checks
	// its management cluster's node ports itself.
	if r.capabilities().PublishesOn(string(hypershiftv1alpha1.HostPort)) {
		l, err := net.Listen("tcp", net.JoinHostPort("", portText))
		if err != nil {
			return fmt.Sprintf(changed, "port "+portText+" is in use")
		}
		reached := loopbackReaches(portText)
		_ = l.Close()
		if !reached {
			return fmt.Sprintf(changed, "port "+portText+" is free, but connections to it do not arrive on this host (a firewall rule takes them, e.g. kube-proxy's for a NodePort Service of a cluster this host is a node of)")
		}
	}
	ref := runtime.ControlPlaneRef{Namespace: s.ns, Name: s.hc.Name}
	pinned, err := r.Runtime.PinPorts(ref, map[string]int{components.EndpointPort: port})
	switch {
	case err != nil:
		ctrl.LoggerFrom(ctx).Error(err, "pin the archive's API port")
		return fmt.Sprintf(changed, err.Error())
	case !pinned:
		return fmt.Sprintf(changed, "the control plane has ports already")
	}
	return ""
}

// loopbackReaches: a connection to port on loopback arrives (at the
// listener the caller holds there). A port can be free to bind and still
// be taken by a firewall rule: kube-proxy rejects connections to a node
// port without endpoints on every local address, so an API server there
// could not even reach itself.
func loopbackReaches(port string) bool {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", port), time.Second)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

// copyRestoreRequest puts the cluster's restore request on its
// HostedControlPlane, whose controller restores etcd's data from it.
func copyRestoreRequest(hc *hypershiftv1alpha1.HostedCluster, hcp *hypershiftv1alpha1.HostedControlPlane) error {
	req, err := hypershiftv1alpha1.RestoreRequestOf(hc.Annotations)
	if err != nil || req == nil {
		delete(hcp.Annotations, hypershiftv1alpha1.RestoreFromAnnotation)
		return nil //nolint:nilerr // the restore phase reports a bad annotation
	}
	req.Namespace = hc.Namespace
	raw, err := json.Marshal(req) //nolint:gosec // names the Secret, holds none of it
	if err != nil {
		return err
	}
	metav1.SetMetaDataAnnotation(&hcp.ObjectMeta, hypershiftv1alpha1.RestoreFromAnnotation, string(raw))
	return nil
}

// restoredCARotation is the CA-rotation status of the archived
// HostedCluster (archived, as collectState stored it) when it is for the
// rotation hc's spec asks for: the restored PKI is that rotation's (Done,
// or in the phase it was in), so the restored cluster carries on from it
// rather than rotating its CAs again. nil when the archive has none (an
// archive of a cluster never rotated, or made before archives carried it)
// or its token is not the spec's.
func restoredCARotation(archived []byte, hc *hypershiftv1alpha1.HostedCluster) (*hypershiftv1alpha1.CARotationStatus, error) {
	if caRotationOf(hc) != nil || hc.Spec.Certificates == nil || hc.Spec.Certificates.RotateCA == "" {
		return nil, nil
	}
	obj := &hypershiftv1alpha1.HostedCluster{}
	if err := json.Unmarshal(archived, obj); err != nil {
		return nil, fmt.Errorf("%s: %w", backup.HostedClusterEntry, err)
	}
	st := caRotationOf(obj)
	if st == nil || st.Token != hc.Spec.Certificates.RotateCA {
		return nil, nil
	}
	return st, nil
}
