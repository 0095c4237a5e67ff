package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestMeasureBackup10kObjects measures a backup and a restore of a cluster
// with 10,000 ConfigMaps of 1 KiB through the CLI and the operator (the
// figures of docs/backup.md). Opt-in: HYPERSHIFT_BACKUP_MEASURE=1.
func TestMeasureBackup10kObjects(t *testing.T) {
	if os.Getenv("HYPERSHIFT_BACKUP_MEASURE") == "" {
		t.Skip("set HYPERSHIFT_BACKUP_MEASURE=1 to measure")
	}
	quiet(t)
	const objects = 10000
	hs := newCLI(t)
	hs.must("up", "--detach", "--metrics-bind-address", "0", "--backup-file-root", os.TempDir())
	t.Cleanup(func() { hs.run("down", "--purge") })
	hs.must("create", "cluster", "none", "--name", "m", "--wait", "--timeout", "3m")
	saved := t.TempDir()
	kc := filepath.Join(saved, "m.kubeconfig")
	hs.must("create", "kubeconfig", "--name", "m", "-o", kc)
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 1024)
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for w := range 10 {
		wg.Go(func() {
			for i := w; i < objects; i += 10 {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}, Data: map[string]string{"v": pad}}
				if _, err := cs.CoreV1().ConfigMaps("default").Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	keyFile := filepath.Join(saved, "key")
	writeFile(t, keyFile, strings.Repeat("4d", 32))
	archive := filepath.Join(saved, "m.bak")
	start := time.Now()
	out := hs.must("backup", "cluster", "--name", "m", "--to", "file://"+archive, "--key-file", keyFile)
	backupWall := time.Since(start)
	info, err := os.Stat(archive)
	if err != nil {
		t.Fatal(err)
	}
	hs.must("down", "--purge")
	hs.must("up", "--detach", "--metrics-bind-address", "0", "--backup-file-root", os.TempDir())
	start = time.Now()
	hs.must("restore", "cluster", "--from", "file://"+archive, "--key-file", keyFile, "--timeout", "5m")
	available := time.Since(start)
	eventually(t, 5*time.Minute, "every ConfigMap served", func() error {
		list, err := cs.CoreV1().ConfigMaps("default").List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) < objects {
			return errorf("%d config maps", len(list.Items))
		}
		return nil
	})
	t.Logf("%d ConfigMaps of 1 KiB: archive %d bytes; %s; backup CLI wall %s; restore to Available %s, to every object served %s",
		objects, info.Size(), strings.TrimSpace(out), backupWall.Round(time.Millisecond), available.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}
