package volumemirror

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/guestpass"
	"hypershift.dev/internal/hostedref"
	kuberuntime "hypershift.dev/internal/runtime/kube"
	"hypershift.dev/internal/testenv"
	"hypershift.dev/internal/version"
)

// fixture: two real API servers, the management cluster (the
// control-plane namespace clusters-vol, the machines' clusters-vol-machines)
// and the hosted cluster (claims in apps). Neither runs a controller manager: where Kubernetes' volume
// controllers would bind or release, the test writes what they write.
type fixture struct {
	c    client.Client
	kube kubernetes.Interface
	hc   *hypershiftv1alpha1.HostedCluster
	r    *Reconciler
}

const (
	cpNamespace    = "clusters-vol"
	infraNamespace = "clusters-vol-machines"
	guestNamespace = "apps"
	mappedClass    = "infra-backed"
	infraClass     = "fast"
)

var mapping = []ClassMapping{{Guest: mappedClass, Infra: infraClass}, {Guest: "foreign", Infra: infraClass}}

func setUp(t *testing.T) *fixture {
	t.Helper()
	mgmt, guest := testenv.Start(t), testenv.Start(t)
	c := mgmt.FastClient(t)
	kube, err := kubernetes.NewForConfig(guest.FastConfig())
	must(t, err)
	ctx := t.Context()
	hc := hypershiftv1alpha1.NewHostedCluster("clusters", "vol", hypershiftv1alpha1.HostPlatform, version.KubernetesVersion)
	for _, ns := range []string{"clusters", cpNamespace} {
		must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: guestNamespace}}, metav1.CreateOptions{})
	must(t, err)
	must(t, c.Create(ctx, hc))
	// The infrastructure class lets its claims grow (the API server's
	// admission asks the class).
	must(t, c.Create(ctx, &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: infraClass}, Provisioner: "example.com/infra", AllowVolumeExpansion: ptr.To(true),
	}))
	// The mapped class is this driver's; "foreign", though mapped, is
	// another provisioner's in the guest; "standard" is not mapped.
	for name, provisioner := range map[string]string{mappedClass: Driver, "foreign": "example.com/other", "standard": Driver} {
		_, err := kube.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, AllowVolumeExpansion: ptr.To(true),
		}, metav1.CreateOptions{})
		must(t, err)
	}
	return &fixture{c: c, kube: kube, hc: hc, r: &Reconciler{Client: c, APIReader: c, Limits: DefaultLimits}}
}

func (f *fixture) claim(t *testing.T, name, class, size string) *corev1.PersistentVolumeClaim {
	t.Helper()
	pvc, err := f.kube.CoreV1().PersistentVolumeClaims(guestNamespace).Create(t.Context(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: guestNamespace, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &class,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}, metav1.CreateOptions{})
	must(t, err)
	return pvc
}

func (f *fixture) pass(t *testing.T) {
	t.Helper()
	if err := f.r.Pass(t.Context(), f.hc, f.kube, mapping); err != nil {
		t.Fatalf("pass: %v", err)
	}
}

func (f *fixture) infra(t *testing.T, name string) *corev1.PersistentVolumeClaim {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{}
	err := f.c.Get(t.Context(), types.NamespacedName{Namespace: infraNamespace, Name: name}, pvc)
	if apierrors.IsNotFound(err) {
		return nil
	}
	must(t, err)
	return pvc
}

// infraNamespace makes the machines' namespace, as the mirror does, for
// the claims a test makes there itself.
func (f *fixture) infraNamespace(t *testing.T) {
	t.Helper()
	_, err := kuberuntime.EnsureMachinesNamespace(t.Context(), f.c, f.c, cpNamespace, string(f.hc.UID))
	must(t, err)
}

func (f *fixture) volume(t *testing.T, name string) *corev1.PersistentVolume {
	t.Helper()
	pv, err := f.kube.CoreV1().PersistentVolumes().Get(t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	must(t, err)
	return pv
}

// bind writes what the guest's and the infrastructure's volume
// controllers write when they bind: the guest claim to its volume, both
// claims Bound with their capacity.
func (f *fixture) bind(t *testing.T, g *corev1.PersistentVolumeClaim, size string) {
	t.Helper()
	ctx := t.Context()
	g, err := f.kube.CoreV1().PersistentVolumeClaims(guestNamespace).Get(ctx, g.Name, metav1.GetOptions{})
	must(t, err)
	g.Spec.VolumeName = volumeName(string(g.UID))
	g, err = f.kube.CoreV1().PersistentVolumeClaims(guestNamespace).Update(ctx, g, metav1.UpdateOptions{})
	must(t, err)
	g.Status.Phase, g.Status.Capacity = corev1.ClaimBound, corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}
	_, err = f.kube.CoreV1().PersistentVolumeClaims(guestNamespace).UpdateStatus(ctx, g, metav1.UpdateOptions{})
	must(t, err)
	f.infraStatus(t, infraName(string(g.UID)), size)
}

func (f *fixture) infraStatus(t *testing.T, name, size string) {
	t.Helper()
	in := f.infra(t, name)
	in.Status.Phase, in.Status.Capacity = corev1.ClaimBound, corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}
	must(t, f.c.Status().Update(t.Context(), in))
}

// release writes what the guest's volume controller writes when a bound
// volume's claim is gone.
func (f *fixture) release(t *testing.T, name string) {
	t.Helper()
	pv := f.volume(t, name)
	pv.Status.Phase = corev1.VolumeReleased
	_, err := f.kube.CoreV1().PersistentVolumes().UpdateStatus(t.Context(), pv, metav1.UpdateOptions{})
	must(t, err)
}

// TestVolumeMirror runs the scenarios below, in order, on one pair of API
// servers.
func TestVolumeMirror(t *testing.T) {
	f := setUp(t)
	for _, s := range []struct {
		name string
		run  func(*testing.T, *fixture)
	}{
		{"provision, grow, reclaim", provisionGrowReclaim},
		{"only this cluster's claims", onlyThisClustersClaims},
		{"a truncated pass sweeps nothing", truncatedPassSweepsNothing},
	} {
		if !t.Run(s.name, func(t *testing.T) { s.run(t, f) }) {
			return
		}
	}
}

// A claim of a mapped class gets an infrastructure claim of the mapped
// class and a guest volume bound in advance to it; a pass with nothing
// to do writes nothing; growing the claim grows the infrastructure claim
// and then the volume and the claim's capacity; deleting the claim
// deletes the infrastructure claim and the volume. Claims of an unmapped
// class, or of a mapped class that names another provisioner in the
// guest, are not touched.
func provisionGrowReclaim(t *testing.T, f *fixture) {
	ctx := t.Context()
	g := f.claim(t, "data", mappedClass, "1Gi")
	other := f.claim(t, "other", "standard", "1Gi")
	foreign := f.claim(t, "foreign", "foreign", "1Gi")
	f.pass(t)

	in := f.infra(t, infraName(string(g.UID)))
	if in == nil {
		t.Fatal("no infrastructure claim")
	}
	// In the machines' namespace, made for this cluster: its attachment
	// pods are to be privileged, as the machines are.
	ns := &corev1.Namespace{}
	must(t, f.c.Get(ctx, types.NamespacedName{Name: infraNamespace}, ns))
	if ns.Labels[hostedref.OwnerUIDLabel] != string(f.hc.UID) || ns.Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
		t.Errorf("namespace %s: labels %v, want the cluster's UID and Pod Security privileged", infraNamespace, ns.Labels)
	}
	if ptr.Deref(in.Spec.StorageClassName, "") != infraClass || in.Spec.Resources.Requests.Storage().String() != "1Gi" ||
		in.Labels[hostedref.OwnerUIDLabel] != string(f.hc.UID) || in.Labels[GuestClaimUIDLabel] != string(g.UID) ||
		in.Annotations[GuestClaimAnnotation] != guestNamespace+"/data" {
		t.Errorf("infrastructure claim: class %v, request %s, labels %v, annotations %v", in.Spec.StorageClassName,
			in.Spec.Resources.Requests.Storage(), in.Labels, in.Annotations)
	}
	pv := f.volume(t, volumeName(string(g.UID)))
	if pv == nil {
		t.Fatal("no guest volume")
	}
	if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != Driver || pv.Spec.CSI.VolumeHandle != in.Name ||
		pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != g.UID || pv.Spec.StorageClassName != mappedClass ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.Spec.Capacity.Storage().String() != "1Gi" {
		t.Errorf("guest volume: %+v", pv.Spec)
	}
	for _, o := range []*corev1.PersistentVolumeClaim{other, foreign} {
		if f.infra(t, infraName(string(o.UID))) != nil || f.volume(t, volumeName(string(o.UID))) != nil {
			t.Errorf("claim %s of class %s was provisioned", o.Name, *o.Spec.StorageClassName)
		}
	}

	f.bind(t, g, "1Gi")
	in, pv = f.infra(t, in.Name), f.volume(t, pv.Name)
	f.pass(t)
	if f.infra(t, in.Name).ResourceVersion != in.ResourceVersion || f.volume(t, pv.Name).ResourceVersion != pv.ResourceVersion {
		t.Error("a pass with nothing to do wrote")
	}

	// Grow to 2Gi: the infrastructure claim first; the guest follows once
	// the infrastructure has grown it.
	cur, err := f.kube.CoreV1().PersistentVolumeClaims(guestNamespace).Get(ctx, "data", metav1.GetOptions{})
	must(t, err)
	cur.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	_, err = f.kube.CoreV1().PersistentVolumeClaims(guestNamespace).Update(ctx, cur, metav1.UpdateOptions{})
	must(t, err)
	f.pass(t)
	if got := f.infra(t, in.Name).Spec.Resources.Requests.Storage().String(); got != "2Gi" {
		t.Errorf("infrastructure request after the guest grew: %s", got)
	}
	if got := f.volume(t, pv.Name).Spec.Capacity.Storage().String(); got != "1Gi" {
		t.Errorf("guest volume grew to %s before the infrastructure did", got)
	}
	f.infraStatus(t, in.Name, "2Gi")
	f.pass(t)
	if got := f.volume(t, pv.Name).Spec.Capacity.Storage().String(); got != "2Gi" {
		t.Errorf("guest volume capacity: %s", got)
	}
	cur, err = f.kube.CoreV1().PersistentVolumeClaims(guestNamespace).Get(ctx, "data", metav1.GetOptions{})
	must(t, err)
	if got := cur.Status.Capacity.Storage().String(); got != "2Gi" {
		t.Errorf("guest claim capacity: %s", got)
	}

	// Delete: the claim's controller releases the volume.
	must(t, f.kube.CoreV1().PersistentVolumeClaims(guestNamespace).Delete(ctx, "data", metav1.DeleteOptions{}))
	f.release(t, pv.Name)
	f.pass(t)
	if in := f.infra(t, in.Name); in != nil && in.DeletionTimestamp == nil {
		t.Error("infrastructure claim kept after its volume was released")
	}
	if pv := f.volume(t, pv.Name); pv != nil && (pv.DeletionTimestamp == nil || hasFinalizer(pv, Finalizer)) {
		t.Errorf("guest volume after release: deleting %v, finalizers %v", pv.DeletionTimestamp, pv.Finalizers)
	}
}

// A guest volume's handle is the guest admin's to write: a released
// volume of this driver naming a claim that is not this cluster's (etcd's
// own, another cluster's) deletes nothing; a claim of the name that is
// not this cluster's is left alone and the guest claim stays pending.
// A volume deleted with policy Retain keeps its infrastructure claim.
func onlyThisClustersClaims(t *testing.T, f *fixture) {
	ctx := t.Context()
	etcd := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: cpNamespace, Name: "data-etcd-0"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	must(t, f.c.Create(ctx, etcd))
	f.infraNamespace(t)
	another := etcd.DeepCopy()
	another.ResourceVersion, another.Namespace, another.Name = "", infraNamespace, infraName("11111111-2222-3333-4444-555555555555")
	another.Labels = infraLabels(&hypershiftv1alpha1.HostedCluster{ObjectMeta: metav1.ObjectMeta{UID: "another", Name: "b", Namespace: "clusters"}},
		"11111111-2222-3333-4444-555555555555")
	must(t, f.c.Create(ctx, another))
	for name, handle := range map[string]string{"forged-etcd": etcd.Name, "forged-another": another.Name} {
		pv, err := f.kube.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
				PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: Driver, VolumeHandle: handle}},
			},
		}, metav1.CreateOptions{})
		must(t, err)
		f.release(t, pv.Name)
	}
	// A claim whose infrastructure name is taken by a claim not labelled
	// as this cluster's.
	g := f.claim(t, "taken", mappedClass, "1Gi")
	taken := another.DeepCopy()
	taken.ResourceVersion, taken.Name, taken.Labels = "", infraName(string(g.UID)), nil
	must(t, f.c.Create(ctx, taken))
	f.pass(t)
	for _, c := range []*corev1.PersistentVolumeClaim{etcd, another, taken} {
		in := &corev1.PersistentVolumeClaim{}
		if err := f.c.Get(ctx, client.ObjectKeyFromObject(c), in); err != nil || in.DeletionTimestamp != nil {
			t.Errorf("claim %s/%s, not this cluster's, was deleted (%v)", c.Namespace, c.Name, err)
		}
	}
	if f.volume(t, volumeName(string(g.UID))) != nil {
		t.Error("a guest volume was made over a claim that is not this cluster's")
	}

	// Retain: the volume goes, its infrastructure claim stays, and a
	// complete pass does not sweep it.
	must(t, f.c.Delete(ctx, taken))
	kept := f.claim(t, "kept", mappedClass, "1Gi")
	f.pass(t)
	pvName := volumeName(string(kept.UID))
	pv := f.volume(t, pvName)
	pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	_, err := f.kube.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{})
	must(t, err)
	must(t, f.kube.CoreV1().PersistentVolumeClaims(guestNamespace).Delete(ctx, "kept", metav1.DeleteOptions{}))
	must(t, f.kube.CoreV1().PersistentVolumes().Delete(ctx, pvName, metav1.DeleteOptions{}))
	f.pass(t)
	f.pass(t)
	in := f.infra(t, infraName(string(kept.UID)))
	if in == nil || in.DeletionTimestamp != nil || in.Labels[RetainedLabel] != "true" {
		t.Errorf("retained volume's infrastructure claim: %v", in)
	}
	if pv := f.volume(t, pvName); pv != nil && hasFinalizer(pv, Finalizer) {
		t.Error("a deleted volume of policy Retain kept the finalizer")
	}
}

// A pass cut short by its limits (claims of mirrored classes, bytes)
// deletes no infrastructure claim for being unreferenced; a complete pass
// deletes one whose guest claim went before its volume was made.
func truncatedPassSweepsNothing(t *testing.T, f *fixture) {
	ctx := t.Context()
	f.infraNamespace(t)
	orphan := infraClaim(f.hc, infraNamespace, infraClass, guestClaim{
		Namespace: guestNamespace, Name: "gone", UID: "99999999-8888-7777-6666-555555555555",
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, Request: resource.MustParse("1Gi"),
	})
	must(t, f.c.Create(ctx, orphan))
	f.claim(t, "a", mappedClass, "1Gi")
	f.claim(t, "b", mappedClass, "1Gi")
	for _, l := range []Limits{
		{PageSize: 100, MaxBytes: DefaultLimits.MaxBytes, MaxVolumes: 1},
		{PageSize: 1, MaxBytes: 3000, MaxVolumes: 100},
	} {
		r := *f.r
		r.Limits = l
		if err := r.Pass(ctx, f.hc, f.kube, mapping); !errors.Is(err, guestpass.ErrTruncated) {
			t.Fatalf("pass with limits %+v: %v, want truncated", l, err)
		}
		if in := f.infra(t, orphan.Name); in == nil || in.DeletionTimestamp != nil {
			t.Fatalf("a pass truncated by %+v deleted an infrastructure claim", l)
		}
	}
	f.pass(t)
	if in := f.infra(t, orphan.Name); in != nil && in.DeletionTimestamp == nil {
		t.Error("a complete pass kept an infrastructure claim no guest claim or volume refers to")
	}
}

func hasFinalizer(o metav1.Object, f string) bool {
	for _, x := range o.GetFinalizers() {
		if x == f {
			return true
		}
	}
	return false
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
