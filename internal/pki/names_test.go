package pki

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Every key pair the PKI writes, through a whole CA rotation, is one that
// IsKeyPairName admits (a restore recreates it), and a name of any other
// Secret of a control-plane namespace is not.
func TestIsKeyPairNameCoversWhatThePKIWrites(t *testing.T) {
	store := FileStore{Dir: t.TempDir()}
	opts := ControlPlaneOptions{Renew: true, LeafValidity: time.Hour}
	seen := map[string]bool{}
	record := func() {
		t.Helper()
		if _, err := EnsureControlPlane(store, opts); err != nil {
			t.Fatal(err)
		}
		files, err := filepath.Glob(filepath.Join(store.Dir, "*.crt"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			seen[strings.TrimSuffix(filepath.Base(f), ".crt")] = true
		}
	}
	record()
	steps := []func() error{
		func() error { return StartCARotation(store, RotatedCANames(), time.Hour, time.Now()) },
		func() error { return PromoteNextCAs(store, RotatedCANames()) },
		func() error { return DropPreviousCAs(store, RotatedCANames()) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			t.Fatal(err)
		}
		record()
	}
	if len(seen) < 20 {
		t.Fatalf("only %d key pairs written (%v): the rotation did not run", len(seen), seen)
	}
	for name := range seen {
		if !IsKeyPairName(name) {
			t.Errorf("the PKI writes %s, which IsKeyPairName refuses", name)
		}
	}
	for _, name := range []string{"admin-kubeconfig", "etcd-encryption-key", "kube-apiserver-files", "addon-extra-kubeconfig", "root-ca-x", ""} {
		if IsKeyPairName(name) {
			t.Errorf("IsKeyPairName admits %q", name)
		}
	}
}
