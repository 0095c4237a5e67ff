package dump

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"hypershift.dev/internal/pki"
)

// Every Secret value the redactor learned is gone from text that quotes
// it raw, base64-encoded or line by line; key material it never saw is
// caught by its form; ordinary text stays.
func TestScrubRemovesSecretsAndKeyMaterial(t *testing.T) {
	ca, err := pki.NewCA("test")
	if err != nil {
		t.Fatal(err)
	}
	other, err := pki.NewCA("unseen")
	if err != nil {
		t.Fatal(err)
	}
	encryptionKey := []byte("0123456789abcdef0123456789abcdef")
	var r Redactor
	r.Learn(&corev1.Secret{Data: map[string][]byte{
		"tls.key": ca.KeyPEM, "key": encryptionKey, "short": []byte("true"),
	}})
	keyLine := strings.Split(string(ca.KeyPEM), "\n")[1]
	in := strings.Join([]string{
		"raw: " + string(encryptionKey),
		"b64: " + base64.StdEncoding.EncodeToString(encryptionKey),
		"quoted line: " + keyLine,
		"whole: " + string(ca.KeyPEM),
		"unseen: " + string(other.KeyPEM),
		"client-key-data: c2VjcmV0LWtleS1kYXRh",
		`{"token":"abc.def-ghi"}`,
		"Authorization: Bearer sometokenvalue",
		"join --token abcdef.0123456789abcdef",
		"sa: eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2lnbmF0dXJlLXZhbHVl",
		"ordinary: the scheduler is true to its word",
		"volume:\n  secret:\n    secretName: admin-kubeconfig",
	}, "\n")
	out := string(r.Scrub([]byte(in)))
	for _, leaked := range []string{
		string(encryptionKey), base64.StdEncoding.EncodeToString(encryptionKey), keyLine,
		"PRIVATE KEY", "c2VjcmV0LWtleS1kYXRh", "abc.def-ghi", "sometokenvalue",
		"abcdef.0123456789abcdef", "eyJhbGciOiJSUzI1NiJ9",
	} {
		if strings.Contains(out, leaked) {
			t.Errorf("scrubbed text still has %q:\n%s", leaked, out)
		}
	}
	for _, kept := range []string{"ordinary: the scheduler is true to its word", "  secret:\n    secretName: admin-kubeconfig", "client-key-data: " + redacted} {
		if !strings.Contains(out, kept) {
			t.Errorf("scrubbed text lost %q:\n%s", kept, out)
		}
	}
}

// A redacted Secret names its keys and their sizes, never a value.
func TestRedactSecret(t *testing.T) {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: `{"data":{"k":"dmFsdWU="}}`}},
		Data:       map[string][]byte{"tls.key": []byte("secret-value"), "ca.crt": []byte("cert")},
		StringData: map[string]string{"x": "y"},
	}
	got := RedactSecret(s)
	if got.Data != nil || got.StringData != nil {
		t.Errorf("values kept: %v %v", got.Data, got.StringData)
	}
	if _, ok := got.Annotations[corev1.LastAppliedConfigAnnotation]; ok {
		t.Error("the last-applied annotation (a copy of the values) was kept")
	}
	if want := "ca.crt (4 bytes), tls.key (12 bytes)"; got.Annotations["dump.hypershift.dev/redacted-keys"] != want {
		t.Errorf("keys %q, want %q", got.Annotations["dump.hypershift.dev/redacted-keys"], want)
	}
	if string(s.Data["tls.key"]) != "secret-value" {
		t.Error("the original Secret was changed")
	}
}

func TestLastLines(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc", 2, "b\nc\n"},
		{"a\nb\n", 5, "a\nb\n"},
		{"", 3, "\n"},
	} {
		if got := string(lastLines([]byte(tc.in), tc.n)); got != tc.want {
			t.Errorf("lastLines(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// A dump is written as a new directory or a new .tar.gz, never over
// anything that exists.
func TestWriteNeverOverwrites(t *testing.T) {
	b := &Bundle{Files: []File{{Path: "summary.txt", Data: []byte("s\n")}, {Path: "components/logs/etcd-0.log", Data: []byte("l\n")}}}
	dir := t.TempDir()
	now := time.Now()

	asDir := filepath.Join(dir, "dump")
	if err := b.Write(asDir, now); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(asDir, "components", "logs", "etcd-0.log")); err != nil || string(data) != "l\n" {
		t.Errorf("directory dump: %q, %v", data, err)
	}
	if err := b.Write(asDir, now); err == nil {
		t.Error("wrote into an existing directory")
	}

	archive := filepath.Join(dir, "d.tar.gz")
	if err := b.Write(archive, now); err != nil {
		t.Fatal(err)
	}
	names := tarNames(t, archive)
	if strings.Join(names, ",") != "d/summary.txt,d/components/logs/etcd-0.log" {
		t.Errorf("archive holds %v", names)
	}
	foreign := filepath.Join(dir, "foreign.tar.gz")
	if err := os.WriteFile(foreign, []byte("not ours"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(foreign, now); err == nil {
		t.Error("wrote over an existing file")
	}
	if data, _ := os.ReadFile(foreign); string(data) != "not ours" {
		t.Errorf("existing file changed: %q", data)
	}
}

func tarNames(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	gz, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var names []string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
	}
}

// TestDumpRedactsEnvValues: a pod spec's literal env values — where
// workloads keep passwords — are not in a dump, in a hosted Pod or in the
// pod template of a control plane's Deployment; references are kept.
func TestDumpRedactsEnvValues(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", Env: []corev1.EnvVar{{Name: "DB_PASSWORD", Value: "hunter2"}}}},
		Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{
			{Name: "TOKEN", Value: "s3cr3t"},
			{Name: "FROM_SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k", LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}}},
		}}},
	}}
	redactPodEnv(&pod.Spec)
	if v := pod.Spec.InitContainers[0].Env[0].Value; v != envRedacted {
		t.Errorf("init container env value %q", v)
	}
	if v := pod.Spec.Containers[0].Env[0].Value; v != envRedacted {
		t.Errorf("container env value %q", v)
	}
	if ref := pod.Spec.Containers[0].Env[1].ValueFrom; ref == nil || ref.SecretKeyRef.Name != "s" {
		t.Errorf("a reference was not kept: %+v", pod.Spec.Containers[0].Env[1])
	}

	deploy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "kube-apiserver", "env": []any{
				map[string]any{"name": "PASSWORD", "value": "hunter2"},
				map[string]any{"name": "REF", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "s", "key": "k"}}},
			}}},
		}}},
	}}
	redactWorkloadEnv(deploy, "Deployment")
	out, err := yaml.Marshal(deploy.Object)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "hunter2") || !strings.Contains(string(out), envRedacted) || !strings.Contains(string(out), "secretKeyRef") {
		t.Errorf("Deployment after redaction:\n%s", out)
	}
}
