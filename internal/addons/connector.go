package addons

import (
	"context"
	"errors"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/components"
	"hypershift.dev/internal/hostedref"
	"hypershift.dev/internal/kubeconfig"
	kuberuntime "hypershift.dev/internal/runtime/kube"
)

// The connector: in the hosted cluster, one ServiceAccount per
// ObjectDeployment in ConnectorNamespace, bound to the rules connectorRules
// makes from the addon's hosted-cluster objects; in the control-plane
// namespace, a kubeconfig Secret with a bound token of it (TokenRequest),
// which the controller applies with and which the addon's pods may mount.
const (
	ConnectorNamespace = "hypershift-addons"
	// AdminKubeconfigSecret is the hosted cluster's admin kubeconfig in the
	// control-plane namespace: the operator sets the connector up with it
	// and never applies addon objects with it.
	AdminKubeconfigSecret = hostedref.AdminKubeconfigSecret
	// KubeconfigKey holds the kubeconfig in both Secrets.
	KubeconfigKey = "kubeconfig"
	// TokenExpiryAnnotation records when the connector Secret's token ends.
	TokenExpiryAnnotation = "addons.hypershift.dev/token-expiry" //nolint:gosec // an annotation's name, not a credential
	// tokenLifetime: a bound token is renewed a third before it ends.
	tokenLifetime = time.Hour
)

// ConnectorName is the ServiceAccount, roles and bindings of od's
// connector in the hosted cluster.
func ConnectorName(od *hypershiftv1alpha1.ObjectDeployment) string { return "addon-" + od.Name }

// ConnectorSecretName is the kubeconfig Secret beside od.
func ConnectorSecretName(od *hypershiftv1alpha1.ObjectDeployment) string {
	return "addon-" + od.Name + "-kubeconfig"
}

// errNoHostedCluster: the namespace is not a control-plane namespace or its
// hosted cluster is not (or no longer) there.
var errNoHostedCluster = errors.New("no hosted cluster")

// hostedAdminConfig is the admin REST config of the hosted cluster of ns.
func hostedAdminConfig(ctx context.Context, mgmt client.Client, ns string) (*rest.Config, error) {
	hcps := &hypershiftv1alpha1.HostedControlPlaneList{}
	if err := mgmt.List(ctx, hcps, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("list HostedControlPlanes in %s: %w", ns, err)
	}
	if len(hcps.Items) == 0 {
		return nil, fmt.Errorf("%w: namespace %s holds no HostedControlPlane; hosted-cluster phases belong in the control-plane namespace of a hosted cluster", errNoHostedCluster, ns)
	}
	if hcps.Items[0].DeletionTimestamp != nil {
		return nil, fmt.Errorf("%w: HostedControlPlane %s/%s is being deleted", errNoHostedCluster, ns, hcps.Items[0].Name)
	}
	secret := &corev1.Secret{}
	if err := mgmt.Get(ctx, client.ObjectKey{Namespace: ns, Name: AdminKubeconfigSecret}, secret); err != nil {
		return nil, fmt.Errorf("admin kubeconfig %s/%s of the hosted cluster: %w", ns, AdminKubeconfigSecret, err)
	}
	cfg, err := kubeconfig.Parse(secret.Data[KubeconfigKey])
	if err != nil {
		return nil, fmt.Errorf("admin kubeconfig %s/%s: %w", ns, AdminKubeconfigSecret, err)
	}
	return cfg, nil
}

// ensureConnector makes od's connector match objs and returns the REST
// config of its credentials, and a function that makes the Roles again:
// those of namespaces a phase creates can only be made after it, before
// the next hosted-cluster phase.
func ensureConnector(ctx context.Context, mgmt, admin client.Client, adminCfg *rest.Config, od *hypershiftv1alpha1.ObjectDeployment, owner Owner, objs []hostedObject, now time.Time) (*rest.Config, func(context.Context) error, error) {
	name := ConnectorName(od)
	labels := map[string]string{OwnerUIDLabel: owner.UID}
	meta := func(ns string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: map[string]string{OwnerAnnotation: owner.String()}}
	}
	cluster, namespaced := connectorRules(objs)
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ConnectorNamespace, Name: name}}
	objects := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ConnectorNamespace}},
		&corev1.ServiceAccount{ObjectMeta: meta(ConnectorNamespace)},
		&rbacv1.ClusterRole{ObjectMeta: meta(""), Rules: cluster},
		&rbacv1.ClusterRoleBinding{ObjectMeta: meta(""), Subjects: subject, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}},
	}
	for _, o := range objects {
		if err := applyConnectorObject(ctx, admin, o, owner); err != nil {
			return nil, nil, err
		}
	}
	roles := func(ctx context.Context) error {
		return reconcileConnectorRoles(ctx, admin, name, meta, subject, namespaced, owner)
	}
	if err := roles(ctx); err != nil {
		return nil, nil, err
	}
	cfg, err := connectorConfig(ctx, mgmt, admin, adminCfg, od, name, now)
	return cfg, roles, err
}

// reconcileConnectorRoles makes a Role and RoleBinding in each namespace of
// namespaced and removes those of namespaces no longer in it.
func reconcileConnectorRoles(ctx context.Context, admin client.Client, name string, meta func(string) metav1.ObjectMeta, subject []rbacv1.Subject, namespaced map[string][]rbacv1.PolicyRule, owner Owner) error {
	for ns, rules := range namespaced {
		for _, o := range []client.Object{
			&rbacv1.Role{ObjectMeta: meta(ns), Rules: rules},
			&rbacv1.RoleBinding{ObjectMeta: meta(ns), Subjects: subject, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}},
		} {
			if err := applyConnectorObject(ctx, admin, o, owner); err != nil {
				if apierrors.IsNotFound(err) {
					break // the namespace comes with a phase
				}
				return err
			}
		}
	}
	roles := &rbacv1.RoleList{}
	if err := admin.List(ctx, roles, client.MatchingLabels(meta("").Labels)); err != nil {
		return fmt.Errorf("list the connector's Roles: %w", err)
	}
	for i := range roles.Items {
		r := &roles.Items[i]
		if _, keep := namespaced[r.Namespace]; keep || r.Name != name {
			continue
		}
		for _, kind := range []string{"RoleBinding", "Role"} {
			if _, err := deleteOwned(ctx, admin, rbacv1.SchemeGroupVersion.WithKind(kind), r.Namespace, name, owner); err != nil {
				return fmt.Errorf("delete the connector's %s %s/%s: %w", kind, r.Namespace, name, err)
			}
		}
	}
	return nil
}

// connectorConfig returns the connector's credentials from its Secret,
// renewing the bound token when a third of its life is left.
func connectorConfig(ctx context.Context, mgmt, admin client.Client, adminCfg *rest.Config, od *hypershiftv1alpha1.ObjectDeployment, name string, now time.Time) (*rest.Config, error) {
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: od.Namespace, Name: ConnectorSecretName(od)}
	err := mgmt.Get(ctx, key, secret)
	if client.IgnoreNotFound(err) != nil {
		return nil, fmt.Errorf("connector Secret %s: %w", key, err)
	}
	server, err2 := podServer(ctx, mgmt, od.Namespace, adminCfg.Host)
	if err2 != nil {
		return nil, err2
	}
	if err == nil {
		expiry, perr := time.Parse(time.RFC3339, secret.Annotations[TokenExpiryAnnotation])
		if perr == nil && now.Before(expiry.Add(-tokenLifetime/3)) {
			if cfg, cerr := kubeconfig.Parse(secret.Data[KubeconfigKey]); cerr == nil && cfg.Host == server {
				// The operator reaches the API where its admin
				// kubeconfig does, which may not be the pods' address.
				cfg.Host = adminCfg.Host
				return cfg, nil
			}
		}
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(tokenLifetime.Seconds()))}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ConnectorNamespace, Name: name}}
	if err := admin.SubResource("token").Create(ctx, sa, tr); err != nil {
		return nil, fmt.Errorf("request a token for ServiceAccount %s/%s in the hosted cluster: %w", ConnectorNamespace, name, err)
	}
	params := kubeconfig.Params{Name: "addon-" + od.Name, Server: server, CAPEM: adminCfg.CAData, Token: tr.Status.Token}
	kc, err := kubeconfig.Render(params)
	if err != nil {
		return nil, err
	}
	t := true
	want := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: key.Namespace, Name: key.Name,
			Labels:      map[string]string{OwnerUIDLabel: string(od.UID)},
			Annotations: map[string]string{TokenExpiryAnnotation: tr.Status.ExpirationTimestamp.UTC().Format(time.RFC3339)},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: hypershiftv1alpha1.GroupVersion.String(), Kind: "ObjectDeployment", Name: od.Name, UID: od.UID, Controller: &t,
			}},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{KubeconfigKey: kc},
	}
	if err := applyTyped(ctx, mgmt, want); err != nil {
		return nil, err
	}
	params.Server = adminCfg.Host
	return kubeconfig.RESTConfig(params), nil
}

// podServer is the server of the connector's kubeconfig: where a pod in
// the control-plane namespace ns reaches the hosted API server. On the
// kube runtime that is the API server's Service in ns, found by its
// control plane's owner UID (its serving certificate names
// kube-apiserver.<ns>.svc, hostedcluster reconcilePKI); elsewhere (the
// process runtime, whose components listen on the host) it is the admin
// kubeconfig's server, adminHost.
func podServer(ctx context.Context, mgmt client.Client, ns, adminHost string) (string, error) {
	hcps := &hypershiftv1alpha1.HostedControlPlaneList{}
	if err := mgmt.List(ctx, hcps, client.InNamespace(ns)); err != nil {
		return "", fmt.Errorf("list HostedControlPlanes in %s: %w", ns, err)
	}
	svcs := &corev1.ServiceList{}
	for i := range hcps.Items {
		if err := mgmt.List(ctx, svcs, client.InNamespace(ns), client.MatchingLabels{
			kuberuntime.ManagedByLabel: kuberuntime.ManagedBy, kuberuntime.OwnerUIDLabel: string(hcps.Items[i].UID),
			kuberuntime.ComponentLabel: components.KubeAPIServer,
		}); err != nil {
			return "", fmt.Errorf("list the API server's Services in %s: %w", ns, err)
		}
		if s := serviceServer(svcs.Items); s != "" {
			return s, nil
		}
	}
	return adminHost, nil
}

// serviceServer is the https URL of the API server's in-cluster Service
// among svcs (its ClusterIP Service named for the component; the published
// ones are for clients outside), "" when there is none.
func serviceServer(svcs []corev1.Service) string {
	for i := range svcs {
		s := &svcs[i]
		if s.Name != components.KubeAPIServer || s.Spec.Type != corev1.ServiceTypeClusterIP {
			continue
		}
		for _, p := range s.Spec.Ports {
			if p.Name == components.PublishedPort {
				return fmt.Sprintf("https://%s:%d", kuberuntime.ServiceDNSNames(s.Namespace, s.Name)[2], p.Port)
			}
		}
	}
	return ""
}

// deleteConnector removes od's connector from the hosted cluster (the
// kubeconfig Secret goes with od, its owner): only objects that carry
// od's owner label.
func deleteConnector(ctx context.Context, admin client.Client, od *hypershiftv1alpha1.ObjectDeployment, owner Owner) error {
	name := ConnectorName(od)
	roles := &rbacv1.RoleList{}
	if err := admin.List(ctx, roles, client.MatchingLabels{OwnerUIDLabel: owner.UID}); err != nil {
		return fmt.Errorf("list the connector's Roles: %w", err)
	}
	rbac := func(kind string) schema.GroupVersionKind { return rbacv1.SchemeGroupVersion.WithKind(kind) }
	type ref struct {
		gvk      schema.GroupVersionKind
		ns, name string
	}
	refs := []ref{}
	for i := range roles.Items {
		ns := roles.Items[i].Namespace
		refs = append(refs, ref{rbac("RoleBinding"), ns, name}, ref{rbac("Role"), ns, name})
	}
	refs = append(refs, ref{rbac("ClusterRoleBinding"), "", name}, ref{rbac("ClusterRole"), "", name},
		ref{corev1.SchemeGroupVersion.WithKind("ServiceAccount"), ConnectorNamespace, name})
	for _, r := range refs {
		if _, err := deleteOwned(ctx, admin, r.gvk, r.ns, r.name, owner); err != nil {
			return fmt.Errorf("delete the connector: %w", err)
		}
	}
	return nil
}

// applyConnectorObject applies one of the connector's own objects in the
// hosted cluster, unless an object of that kind and name exists there that
// is not this connector's (another's, or the tenant's): that is refused,
// never taken over. The connector's namespace, shared by every addon's
// connector and owned by none, is applied as it is.
func applyConnectorObject(ctx context.Context, admin client.Client, obj client.Object, owner Owner) error {
	if _, shared := obj.(*corev1.Namespace); !shared {
		gvks, _, err := admin.Scheme().ObjectKinds(obj)
		if err != nil {
			return fmt.Errorf("kind of %T: %w", obj, err)
		}
		got, err := getObject(ctx, admin, gvks[0], obj.GetNamespace(), obj.GetName())
		if err != nil {
			return err
		}
		if got != nil && !owner.owns(got) {
			return fmt.Errorf("the hosted cluster's %s %s exists and is not this addon's connector's: it is left alone; remove or rename it, or rename the ObjectDeployment",
				gvks[0].Kind, namespacedName(obj.GetNamespace(), obj.GetName()))
		}
	}
	return applyTyped(ctx, admin, obj)
}
