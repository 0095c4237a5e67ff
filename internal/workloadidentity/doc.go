// Package workloadidentity is a mutating admission webhook that gives a
// hosted cluster's pods cloud credentials without keys: a short-lived,
// audience-bound projected service-account token, and the environment
// variables that tell the cloud's SDKs where it is and which identity to
// exchange it for (OIDC federation). It implements, in one webhook, the
// documented contracts of two upstream webhooks, so workloads and manifests
// written for them work unchanged:
//
//   - Azure Workload Identity (github.com/Azure/azure-workload-identity),
//     as documented in its book ("Service Account Labels and Annotations",
//     "Mutating Admission Webhook") and released up to v1.5;
//   - the Amazon EKS Pod Identity Webhook
//     (github.com/aws/amazon-eks-pod-identity-webhook), IAM Roles for
//     Service Accounts, as its README documents.
//
// Mutate is the pure mutation, Handler the AdmissionReview endpoint, Run
// the server (`hypershift component workload-identity-webhook`, flags in
// Options.AddFlags). This comment is the contract; user documentation is
// written from it.
//
// # Azure
//
// Trigger: the pod's label azure.workload.identity/use is exactly "true".
// Upstream's registration selects on it (objectSelector); this webhook
// serves both clouds under one registration, so Mutate checks it. No other
// pod gets anything Azure, whatever its ServiceAccount says.
//
// ServiceAccount annotations (all optional, as upstream documents):
//
//   - azure.workload.identity/client-id → AZURE_CLIENT_ID. Not validated
//     (upstream does not). Absent: AZURE_CLIENT_ID is not injected and a
//     warning says so, unless every container sets it.
//   - azure.workload.identity/tenant-id → AZURE_TENANT_ID; absent: the
//     webhook's --azure-tenant-id. Present but empty: empty, as upstream.
//     Empty either way: not injected, with a warning.
//   - azure.workload.identity/service-account-token-expiration → the
//     token's expirationSeconds, default 3600.
//
// Pod annotations:
//
//   - azure.workload.identity/service-account-token-expiration: as above,
//     and takes precedence over the ServiceAccount's. From either, a value
//     that is not whole seconds in [3600, 86400] refuses the pod, as
//     upstream does, with a message naming the annotation and the range.
//   - azure.workload.identity/skip-containers: semicolon-separated
//     container names (each trimmed), which get neither variables nor mount.
//   - azure.workload.identity/inject-proxy-sidecar: upstream's IMDS proxy
//     sidecar is not implemented here; the pod is admitted with a warning.
//
// Injected into every init container and container not skipped:
//
//   - AZURE_CLIENT_ID, AZURE_TENANT_ID (see above);
//   - AZURE_FEDERATED_TOKEN_FILE=/var/run/secrets/azure/tokens/azure-identity-token;
//   - AZURE_AUTHORITY_HOST: --azure-authority-host, default
//     https://login.microsoftonline.com/ (upstream: from AZURE_ENVIRONMENT);
//   - a read-only volume mount of volume azure-identity-token at
//     /var/run/secrets/azure/tokens.
//
// And into the pod: a projected volume azure-identity-token holding a
// serviceAccountToken at path azure-identity-token, audience
// api://AzureADTokenExchange (--azure-audience), with the expiration above.
//
// What the pod already has (upstream v1.5's behavior, the release whose
// layout the documentation publishes): a variable a container sets itself
// — by value or valueFrom; envFrom is not looked at — is kept, and an empty
// value is never injected; a mount named azure-identity-token is kept
// wherever it points; the volume is not added when any volume already
// projects a service-account token to path azure-identity-token. Upstream
// v1.6 moved the token (a volume named from a hash of the pod's name,
// /var/run/secrets/azure/wi/token/azure-identity-token) and replaces a
// pre-existing mount or volume; its documentation still shows v1.5's
// layout, which is followed here. Applications that read
// AZURE_FEDERATED_TOKEN_FILE, as the SDKs do, see no difference.
//
// Not implemented: the proxy sidecar and v1.6's custom token endpoint.
//
// # AWS
//
// Trigger: the ServiceAccount's annotation eks.amazonaws.com/role-arn is
// present and not empty, and the pod does not carry the label
// eks.amazonaws.com/skip-pod-identity-webhook (upstream's registration
// excludes such pods with an objectSelector; Mutate checks it). The
// annotations' domain is --aws-annotation-prefix (upstream
// --annotation-prefix), default eks.amazonaws.com; the skip label's is not.
//
// ServiceAccount annotations:
//
//   - role-arn → AWS_ROLE_ARN. Checked against the shape upstream checks
//     (arn:aws<partition>:iam::<12 digits>:role/<path and name>); like
//     upstream, a mismatch is injected all the same, with a warning.
//   - audience → the token's audience; absent: --aws-token-audience,
//     default sts.amazonaws.com. Empty: the default, with a warning (here
//     upstream projects a token with no audience, which the API server
//     issues for itself and STS refuses).
//   - sts-regional-endpoints: "true" injects AWS_STS_REGIONAL_ENDPOINTS=regional,
//     "false" does not, overriding --aws-sts-regional-endpoint (default
//     false); anything strconv.ParseBool refuses is ignored, with a warning.
//   - token-expiration → expirationSeconds; absent: --aws-token-expiration,
//     default 86400.
//
// Pod annotations:
//
//   - token-expiration: as above, and takes precedence over the
//     ServiceAccount's. From either, as upstream: a value that is not whole
//     seconds falls back (the pod's to the ServiceAccount's, the
//     ServiceAccount's to the flag's), one under 600 is raised to 600,
//     both with a warning; there is no ceiling (the API server refuses over
//     2^32 seconds and caps at its --service-account-max-token-expiration).
//     Upstream's jitter applies to its EKS Pod Identity mode only, not here.
//   - skip-containers: comma-separated container names, read as one CSV
//     record (names may be quoted, spaces are kept); a list that does not
//     parse skips nothing, with a warning.
//
// Injected into every init container and container not skipped:
//
//   - AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE=<mount path>/token —
//     for a pod whose nodeSelector picks Windows (kubernetes.io/os or
//     beta.kubernetes.io/os = windows), the path is written
//     C:\var\run\secrets\...\token, as upstream;
//   - AWS_DEFAULT_REGION and AWS_REGION, when --aws-default-region is set;
//   - AWS_STS_REGIONAL_ENDPOINTS=regional, when enabled (above);
//   - a read-only volume mount of volume aws-iam-token at
//     --aws-token-mount-path, default
//     /var/run/secrets/eks.amazonaws.com/serviceaccount.
//
// And into the pod: a projected volume aws-iam-token holding a
// serviceAccountToken at path token with the audience and expiration
// above. (Upstream's README example calls the volume aws-token; its code,
// and so every mutated pod, uses aws-iam-token.)
//
// What the pod already has, as upstream: variables come in groups —
// AWS_ROLE_ARN with AWS_WEB_IDENTITY_TOKEN_FILE, AWS_REGION with
// AWS_DEFAULT_REGION, AWS_STS_REGIONAL_ENDPOINTS alone — and a container
// that sets any variable of a group (by value or valueFrom) gets none of
// that group; a container that sets one of each of the three groups gets
// nothing at all, not even the mount; a mount or a volume named
// aws-iam-token is kept whatever it holds.
//
// Not implemented: EKS Pod Identity (container credentials), the
// pod-identity-webhook ConfigMap, and composing ARNs from role names.
//
// # Both, neither, and what is never mutated
//
// A pod that qualifies for both gets both; they share nothing. A pod that
// qualifies for neither is admitted unchanged. Mirror pods (annotation
// kubernetes.io/config.mirror) are never mutated: their spec must stay the
// kubelet's. Every injection keeps what the pod has, so a reinvoked
// webhook (reinvocationPolicy: IfNeeded) changes nothing the second time.
//
// # The admission endpoint
//
// Handler serves admission.k8s.io/v1 AdmissionReviews of pod CREATE
// (register it for pods, CREATE, admissionReviewVersions [v1],
// sideEffects None, failurePolicy Fail, at MutatePath). It answers with a
// JSONPatch computed between the pod as decoded and as mutated, with
// Mutate's warnings as admission warnings. Bodies over MaxRequestBytes get
// 413; anything but a v1 Pod without subresource is refused; other
// operations on pods are allowed unchanged. spec.serviceAccountName empty
// means "default". A ServiceAccount that does not exist admits the pod
// unchanged (the API server's ServiceAccount plugin refuses such pods
// before webhooks run, so it was deleted since; upstream AWS does the same,
// upstream Azure refuses). A lookup that fails otherwise refuses the pod,
// as upstream Azure and failurePolicy: Fail do: a pod must not start
// without credentials its ServiceAccount grants. An annotation upstream
// refuses (the Azure expiration) refuses the pod with a message naming it.
//
// # Who may call it
//
// The patches tell any ServiceAccount's annotations (role ARNs, client
// ids), read with the webhook's own credentials, so with --client-ca-file
// only the API server may ask: a caller must present a client certificate
// that chains to that CA bundle, for client auth, and whose Subject
// CommonName is one of --client-common-name (repeatable; none: any the CA
// issued). A hosted API server presents its kubelet-client certificate
// (kube-apiserver-kubelet-client, of the cluster's client CA). Any other
// certificate fails the TLS handshake. A connection without one reaches
// /healthz and /readyz only, for the readiness probe, which has none; any
// other path answers 403. The bundle is read again when it changes, as
// the serving certificate is; one that does not load keeps the last good
// one. Without --client-ca-file there is no client authentication: anyone
// who reaches the port may call.
package workloadidentity
