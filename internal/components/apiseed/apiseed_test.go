package apiseed_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"

	"hypershift.dev/internal/components/apiseed"
	"hypershift.dev/internal/testenv"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParse(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := writeFile(t, dir, "ca", "ca"), writeFile(t, dir, "crt", "crt"), writeFile(t, dir, "key", "key")
	secretsOnly := writeFile(t, dir, "enc-secrets", "resources:\n- resources: [secrets]\n  providers: [{identity: {}}]\n")
	roles := writeFile(t, dir, "enc-roles", "resources:\n- resources: [secrets, clusterroles.rbac.authorization.k8s.io]\n")
	wildcard := writeFile(t, dir, "enc-all", "resources:\n- resources: ['*.*']\n")
	etcd := []string{"--etcd-servers=https://127.0.0.1:1,https://127.0.0.1:2", "--etcd-cafile=" + ca, "--etcd-certfile=" + cert, "--etcd-keyfile=" + key}
	cases := []struct {
		name   string
		args   []string
		reason string // a part of the reason not to seed; empty: seeded
		check  func(t *testing.T, tg apiseed.Target)
	}{
		{
			name: "defaults", args: append([]string{"--authorization-mode=Node,RBAC", "--secure-port", "6443", "--encryption-provider-config=" + secretsOnly}, etcd...),
			check: func(t *testing.T, tg apiseed.Target) {
				if tg.Prefix != "/registry" || !tg.RBAC || !tg.APF || len(tg.Endpoints) != 2 || string(tg.TLS.KeyPEM) != "key" {
					t.Errorf("target %+v", tg)
				}
			},
		},
		{
			name: "own prefix, no RBAC, no APF", args: append([]string{"--etcd-prefix=/tenant/", "--authorization-mode=AlwaysAllow", "--enable-priority-and-fairness=false"}, etcd...),
			check: func(t *testing.T, tg apiseed.Target) {
				if tg.Prefix != "/tenant" || tg.RBAC || tg.APF {
					t.Errorf("target %+v", tg)
				}
			},
		},
		{name: "feature gates", args: append([]string{"--feature-gates=Foo=true"}, etcd...), reason: "--feature-gates"},
		{name: "runtime config", args: append([]string{"--runtime-config", "api/all=false"}, etcd...), reason: "--runtime-config"},
		{name: "JSON storage", args: append([]string{"--storage-media-type=application/json"}, etcd...), reason: "--storage-media-type"},
		{name: "encrypted roles", args: append([]string{"--encryption-provider-config=" + roles}, etcd...), reason: "clusterroles.rbac.authorization.k8s.io"},
		{name: "encrypted everything", args: append([]string{"--encryption-provider-config=" + wildcard}, etcd...), reason: "*.*"},
		{name: "no etcd client certificate", args: etcd[:2], reason: "client certificate"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tg, reason, err := apiseed.Parse(c.args)
			if err != nil {
				t.Fatal(err)
			}
			if c.reason == "" {
				if reason != "" {
					t.Fatalf("not seeded: %s", reason)
				}
				c.check(t, tg)
				return
			}
			if !strings.Contains(reason, c.reason) {
				t.Errorf("reason %q, want it to name %q", reason, c.reason)
			}
		})
	}
	if _, _, err := apiseed.Parse(append([]string{"--encryption-provider-config=" + filepath.Join(dir, "missing")}, etcd...)); err == nil {
		t.Error("an unreadable encryption configuration was not an error")
	}
}

func TestEncodeGivesEachSeedItsOwnIdentity(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "kube-public"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, Resources: []string{"pods"}, APIGroups: []string{""}}}}
	objects := []apiseed.Object{
		{Resource: "namespaces", GroupVersion: corev1.SchemeGroupVersion, Object: ns},
		{Resource: "roles", GroupVersion: rbacv1.SchemeGroupVersion, Object: role},
	}
	now := time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)
	first, err := apiseed.Encode("/registry", objects, now)
	if err != nil {
		t.Fatal(err)
	}
	second, err := apiseed.Encode("/registry", objects, now)
	if err != nil {
		t.Fatal(err)
	}
	if ns.UID != "" || role.UID != "" {
		t.Error("Encode changed the objects passed in")
	}
	wantKeys := []string{"/registry/namespaces/kube-system", "/registry/roles/kube-public/r"}
	for i, kv := range first {
		if kv.Key != wantKeys[i] {
			t.Errorf("key %q, want %q", kv.Key, wantKeys[i])
		}
		// Stored as the API server stores it: protobuf behind its magic.
		if !strings.HasPrefix(string(kv.Value), "k8s\x00") {
			t.Errorf("%s is not in the API server's protobuf storage format", kv.Key)
		}
		a, b := decode(t, kv.Value), decode(t, second[i].Value)
		if a.GetUID() == "" || a.GetUID() == b.GetUID() {
			t.Errorf("%s: UIDs %q and %q: each seed must give its own", kv.Key, a.GetUID(), b.GetUID())
		}
		if !a.GetCreationTimestamp().Time.Equal(now) {
			t.Errorf("%s: created %v, want %v", kv.Key, a.GetCreationTimestamp(), now)
		}
	}
	if got := decode(t, first[1].Value).(*rbacv1.Role); len(got.Rules) != 1 || got.Rules[0].Verbs[0] != "get" || got.Namespace != "kube-public" {
		t.Errorf("role decoded as %+v", got)
	}
	if _, err := apiseed.Encode("/registry", append(objects, objects[0]), now); err == nil {
		t.Error("a key seeded twice was not refused")
	}
	withUID := ns.DeepCopy()
	withUID.UID = "1"
	if _, err := apiseed.Encode("/registry", []apiseed.Object{{Resource: "namespaces", GroupVersion: corev1.SchemeGroupVersion, Object: withUID}}, now); err == nil {
		t.Error("an object that has a UID was not refused")
	}
}

func decode(t *testing.T, data []byte) metav1.Object {
	t.Helper()
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		t.Fatalf("%T has no metadata", obj)
	}
	return m
}

// TestSeededAPIServerMatchesUpstream starts two management planes from the
// binary, one whose API server is seeded (as every start is) and one with
// the seed turned off (upstream's start), and compares every object of the
// seeded kinds: the seed must write what the API server would have.
func TestSeededAPIServerMatchesUpstream(t *testing.T) {
	seeded := testenv.Start(t)
	t.Setenv(apiseed.DisableEnv, "off")
	bare := testenv.Start(t)

	apiserverLog := func(env *testenv.Env) string {
		data, err := os.ReadFile(filepath.Join(env.DataDir, "management", "kube-apiserver", "kube-apiserver.log"))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	if log := apiserverLog(seeded); !strings.Contains(log, `"Seeded bootstrap objects" written=`) || strings.Contains(log, "written=0 ") {
		t.Fatalf("the seeded API server's log says no seed was written:\n%s", grepLines(log, "seed"))
	}
	if log := apiserverLog(bare); !strings.Contains(log, "Bootstrap objects not seeded") {
		t.Fatalf("the API server with %s=off seeded:\n%s", apiseed.DisableEnv, grepLines(log, "seed"))
	}

	ctx := context.Background()
	a, b := objectsOf(ctx, t, seeded), objectsOf(ctx, t, bare)
	unmanaged := 0
	for key, obj := range b.normalized {
		got, ok := a.normalized[key]
		switch {
		case !ok:
			t.Errorf("%s: made by the API server, missing where seeded", key)
		case got != obj:
			t.Errorf("%s differs:\nseeded: %s\nbare:   %s", key, got, obj)
		}
		if !b.unmanaged[key] && a.unmanaged[key] {
			unmanaged++ // written by the seed, not through the API
		}
	}
	for key := range a.normalized {
		if _, ok := b.normalized[key]; !ok {
			t.Errorf("%s: seeded, but the API server does not make it", key)
		}
	}
	// The seed wrote the bootstrap objects: they carry no managed fields,
	// which every object created through the API has.
	if unmanaged < 150 {
		t.Errorf("%d objects written by the seed, want the ~166 bootstrap objects", unmanaged)
	}

	// A second seed of a used etcd writes nothing.
	target := targetOf(t, seeded)
	before := a.uids["namespaces//kube-system"]
	res, err := apiseed.Seed(ctx, target, []apiseed.Object{{
		Resource: "namespaces", GroupVersion: corev1.SchemeGroupVersion,
		Object: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Written != 0 || res.Skipped == "" {
		t.Errorf("a seed of a used etcd: %+v", res)
	}
	ns, err := kubernetes.NewForConfigOrDie(seeded.RESTConfig).CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(ns.UID) != before {
		t.Errorf("kube-system's UID changed from %s to %s", before, ns.UID)
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(strings.ToLower(l), substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// planeObjects are a plane's objects of the seeded kinds by
// "resource/namespace/name": as JSON without their identity, times, managed
// fields and status; whether they have no managed fields; their UIDs.
type planeObjects struct {
	normalized map[string]string
	unmanaged  map[string]bool
	uids       map[string]string
}

func objectsOf(ctx context.Context, t *testing.T, env *testenv.Env) planeObjects {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(env.RESTConfig)
	out := planeObjects{normalized: map[string]string{}, unmanaged: map[string]bool{}, uids: map[string]string{}}
	add := func(resource string, list runtime.Object, err error) {
		if err != nil {
			t.Fatalf("list %s: %v", resource, err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range items {
			m := item.(metav1.Object)
			key := resource + "/" + m.GetNamespace() + "/" + m.GetName()
			out.uids[key] = string(m.GetUID())
			out.unmanaged[key] = len(m.GetManagedFields()) == 0
			m.SetUID("")
			m.SetResourceVersion("")
			m.SetCreationTimestamp(metav1.Time{})
			m.SetManagedFields(nil)
			m.SetGeneration(0)
			data, err := json.Marshal(item)
			if err != nil {
				t.Fatal(err)
			}
			var fields map[string]any
			if err := json.Unmarshal(data, &fields); err != nil {
				t.Fatal(err)
			}
			delete(fields, "status")
			data, _ = json.Marshal(fields)
			out.normalized[key] = string(data)
		}
	}
	all := metav1.ListOptions{}
	lists := []struct {
		resource string
		list     func() (runtime.Object, error)
	}{
		{"namespaces", func() (runtime.Object, error) { return cs.CoreV1().Namespaces().List(ctx, all) }},
		{"clusterroles", func() (runtime.Object, error) { return cs.RbacV1().ClusterRoles().List(ctx, all) }},
		{"clusterrolebindings", func() (runtime.Object, error) { return cs.RbacV1().ClusterRoleBindings().List(ctx, all) }},
		{"roles", func() (runtime.Object, error) { return cs.RbacV1().Roles("").List(ctx, all) }},
		{"rolebindings", func() (runtime.Object, error) { return cs.RbacV1().RoleBindings("").List(ctx, all) }},
		{"priorityclasses", func() (runtime.Object, error) { return cs.SchedulingV1().PriorityClasses().List(ctx, all) }},
		{"flowschemas", func() (runtime.Object, error) { return cs.FlowcontrolV1().FlowSchemas().List(ctx, all) }},
		{"prioritylevelconfigurations", func() (runtime.Object, error) {
			return cs.FlowcontrolV1().PriorityLevelConfigurations().List(ctx, all)
		}},
	}
	for _, l := range lists {
		list, err := l.list()
		add(l.resource, list, err)
	}
	return out
}

// targetOf reads the running management API server's command line, as the
// seed does at its start.
func targetOf(t *testing.T, env *testenv.Env) apiseed.Target {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.DataDir, "management", "kube-apiserver", "pid.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		PID int `json:"pid"`
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(rec.PID) + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	for i, a := range args {
		if a == "kube-apiserver" {
			args = args[i+1:]
			break
		}
	}
	target, reason, err := apiseed.Parse(args)
	if err != nil || reason != "" {
		t.Fatalf("the management API server's flags: %v %s", err, reason)
	}
	return target
}
