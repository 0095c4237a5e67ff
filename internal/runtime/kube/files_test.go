package kube

import (
	"path"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"hypershift.dev/internal/components"
	"hypershift.dev/internal/runtime"
)

// podTemplates renders specs and returns each workload's pod template and
// each files Secret, by name.
func podTemplates(t *testing.T, specs []runtime.Spec) (map[string]corev1.PodTemplateSpec, map[string]*corev1.Secret) {
	t.Helper()
	objs, err := Objects(testRef, specs, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	templates, secrets := map[string]corev1.PodTemplateSpec{}, map[string]*corev1.Secret{}
	for _, obj := range objs {
		switch o := obj.(type) {
		case *appsv1.Deployment:
			templates[o.Name] = o.Spec.Template
		case *appsv1.StatefulSet:
			templates[o.Name] = o.Spec.Template
		case *corev1.Secret:
			secrets[o.Name] = o
		}
	}
	return templates, secrets
}

// TestFilesMountedAsADirectory: in the renderer's pods every container
// mounts its files as one directory (no subPath, which the kubelet never
// refreshes), holding exactly its own files, and its arguments name the
// files there, never under Dir where nothing mounts them.
func TestFilesMountedAsADirectory(t *testing.T) {
	specs := renderedSpecs(t, testRef, components.HighlyAvailable, 30443)
	templates, _ := podTemplates(t, specs)
	byComponent := map[string]runtime.Spec{}
	for _, s := range specs {
		byComponent[s.Component] = s
	}
	checked := 0
	for name, tmpl := range templates {
		volumes := map[string]corev1.Volume{}
		for _, v := range tmpl.Spec.Volumes {
			volumes[v.Name] = v
		}
		for _, c := range tmpl.Spec.Containers {
			s := byComponent[c.Name]
			var mounts []corev1.VolumeMount
			for _, m := range c.VolumeMounts {
				if v := volumes[m.Name]; v.Secret != nil {
					mounts = append(mounts, m)
				}
			}
			if len(mounts) != 1 || mounts[0].SubPath != "" || mounts[0].MountPath != FilesDir || !mounts[0].ReadOnly {
				t.Errorf("%s/%s mounts its files %+v, want one read-only directory mount at %s without subPath", name, c.Name, mounts, FilesDir)
				continue
			}
			var paths []string
			for _, it := range volumes[mounts[0].Name].Secret.Items {
				paths = append(paths, it.Path)
			}
			var want []string
			for _, f := range s.Files {
				want = append(want, path.Join(s.Component, f.Path))
			}
			if !sameSet(paths, want) {
				t.Errorf("%s/%s's files volume holds %v, want its own files %v", name, c.Name, paths, want)
			}
			args := strings.Join(c.Args, " ")
			for _, f := range s.Files {
				if strings.Contains(args, "="+path.Join(Dir, s.Component, f.Path)+" ") || strings.HasSuffix(args, "="+path.Join(Dir, s.Component, f.Path)) {
					t.Errorf("%s/%s names %s under %s, where it is not mounted", name, c.Name, f.Path, Dir)
				}
			}
			checked++
		}
	}
	if checked != 5 {
		t.Errorf("checked %d containers, want 5 (etcd, the API server and its Konnectivity server, the controller manager, the scheduler)", checked)
	}
	api := byComponent[components.KubeAPIServer]
	for _, c := range templates[components.KubeAPIServer].Spec.Containers {
		if c.Name != components.KubeAPIServer {
			continue
		}
		for _, want := range []string{
			"--tls-cert-file=" + path.Join(FilesDir, "kube-apiserver", "server.crt"),
			"--client-ca-file=" + path.Join(FilesDir, "kube-apiserver", "client-ca.crt"),
			"--audit-log-path=" + path.Join(Dir, "kube-apiserver", "audit.log"), // not a file: stays in the writable directory
		} {
			if !contains(c.Args, want) {
				t.Errorf("the API server's args lack %s (spec args %v)", want, api.Args)
			}
		}
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, x := range a {
		seen[x]++
	}
	for _, x := range b {
		seen[x]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestReloadableFilesRollNothing: a changed Reloadable file (a renewed
// serving certificate, a trust bundle) changes the Secret but not the pod
// template, so the pods keep running and the kubelet refreshes the file;
// a changed file read only at start changes the files hash and rolls them.
func TestReloadableFilesRollNothing(t *testing.T) {
	specs := renderedSpecs(t, testRef, components.HighlyAvailable, 30443)
	templates, secrets := podTemplates(t, specs)

	change := func(component, file string) []runtime.Spec {
		t.Helper()
		out := make([]runtime.Spec, len(specs))
		found := false
		for i, s := range specs {
			s.Files = append([]runtime.File(nil), s.Files...)
			for j, f := range s.Files {
				if s.Component == component && f.Path == file {
					s.Files[j].Content = append(append([]byte(nil), f.Content...), "\n# changed"...)
					found = true
				}
			}
			out[i] = s
		}
		if !found {
			t.Fatalf("no file %s of %s", file, component)
		}
		return out
	}
	for _, tt := range []struct {
		component, file, workload string
		reloadable                bool
	}{
		{components.KubeAPIServer, "server.crt", components.KubeAPIServer, true},
		{components.KubeAPIServer, "client-ca.crt", components.KubeAPIServer, true},
		{components.Etcd, "peer.key", components.Etcd, true},
		{components.KubeScheduler, "client.crt", components.KubeScheduler, true},
		// Read once, but the bundle only grows while the oldest CA in
		// it (hashed through the .oldest file) stays.
		{components.KubeAPIServer, "etcd-ca.crt", components.KubeAPIServer, true},
		{components.KubeAPIServer, "etcd-ca.crt.oldest", components.KubeAPIServer, false},
		{components.KubeAPIServer, "encryption-config.yaml", components.KubeAPIServer, false},
		{components.KonnectivityServer, "server.crt", components.KubeAPIServer, false},
		{components.Etcd, "ca.crt.oldest", components.Etcd, false},
		{components.KubeScheduler, "kubeconfig", components.KubeScheduler, false},
	} {
		t.Run(tt.component+"/"+tt.file, func(t *testing.T) {
			changed := change(tt.component, tt.file)
			for _, s := range changed {
				for _, f := range s.Files {
					if s.Component == tt.component && f.Path == tt.file && f.Reloadable != tt.reloadable {
						t.Fatalf("the renderer marks %s of %s Reloadable=%v; this case expects %v", tt.file, tt.component, f.Reloadable, tt.reloadable)
					}
				}
			}
			gotTemplates, gotSecrets := podTemplates(t, changed)
			secret := filesSecretName(tt.workload)
			if reflect.DeepEqual(gotSecrets[secret].Data, secrets[secret].Data) {
				t.Errorf("Secret %s unchanged: the running pods would never see the new file", secret)
			}
			for name, before := range templates {
				after := gotTemplates[name]
				rolls := !reflect.DeepEqual(before, after)
				wantRoll := !tt.reloadable && name == tt.workload
				if rolls != wantRoll {
					t.Errorf("pod template of %s changed=%v, want %v (%s %s → %s)", name, rolls, wantRoll,
						FilesHashAnnotation, before.Annotations[FilesHashAnnotation], after.Annotations[FilesHashAnnotation])
				}
			}
		})
	}
}

// TestSpecArgs: a file's path is rewritten where it is a flag's whole
// value, one element of a comma-separated value or a whole argument; a
// path that only starts like a file's is not.
func TestSpecArgs(t *testing.T) {
	s := runtime.Spec{Component: "c", Files: []runtime.File{{Path: "ca.crt"}, {Path: "sub/key"}}, Args: []string{
		"--ca=/var/lib/hypershift/c/ca.crt",
		"--pair=/var/lib/hypershift/c/sub/key,/var/lib/hypershift/c/ca.crt",
		"/var/lib/hypershift/c/ca.crt",
		"--oldest=/var/lib/hypershift/c/ca.crt.oldest",
		"--data-dir=/var/lib/hypershift/c/data",
		"--other=/var/lib/hypershift/d/ca.crt",
	}}
	want := []string{
		"--ca=/var/run/hypershift-files/c/ca.crt",
		"--pair=/var/run/hypershift-files/c/sub/key,/var/run/hypershift-files/c/ca.crt",
		"/var/run/hypershift-files/c/ca.crt",
		"--oldest=/var/lib/hypershift/c/ca.crt.oldest",
		"--data-dir=/var/lib/hypershift/c/data",
		"--other=/var/lib/hypershift/d/ca.crt",
	}
	if got := specArgs(s); !reflect.DeepEqual(got, want) {
		t.Errorf("specArgs = %q, want %q", got, want)
	}
}
