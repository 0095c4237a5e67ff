package dump

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/runtime/process"
)

// logTail is one collected log: where it is in the dump and the instance
// (process) or pod/container (kube) it belongs to.
type logTail struct {
	Instance string
	Path     string
}

// maxLogRead is how much of the end of a log file is read for its tail.
const maxLogRead = 256 << 10

// componentLogs collects the log tails of the control plane's components:
// the containers of its pods on the kube runtime (also the previous
// container's when one restarted), or the instances' log files on the
// process runtime of this host.
// Process log files are read only from a directory whose owner marker
// names this control plane (owner, its UID): a directory of the same name
// may belong to another management plane's cluster.
func (c *collector) componentLogs(ctx context.Context, cpNamespace, owner string) []logTail {
	pods := &corev1.PodList{}
	if err := c.o.Client.List(ctx, pods, client.InNamespace(cpNamespace)); err != nil {
		c.problem("pods in %s: %v", cpNamespace, err)
	}
	if len(pods.Items) > 0 {
		return c.podLogs(ctx, pods.Items)
	}
	if c.o.ProcessRoot == "" || owner == "" {
		return nil
	}
	dir := filepath.Join(c.o.ProcessRoot, cpNamespace)
	got, err := os.ReadFile(filepath.Join(dir, process.OwnerFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		c.problem("component logs: %v", err)
		return nil
	case strings.TrimSpace(string(got)) != owner:
		c.problem("component logs: %s belongs to owner %s, not this control plane (%s): not read", dir, strings.TrimSpace(string(got)), owner)
		return nil
	}
	return c.processLogs(dir)
}

func (c *collector) podLogs(ctx context.Context, pods []corev1.Pod) []logTail {
	if c.o.Clientset == nil {
		c.problem("pod logs: no client for the management cluster")
		return nil
	}
	var out []logTail
	lines := int64(c.o.LogLines)
	for _, pod := range pods {
		for _, st := range pod.Status.ContainerStatuses {
			for _, previous := range []bool{false, true} {
				if previous && st.RestartCount == 0 {
					continue
				}
				req := c.o.Clientset.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{
					Container: st.Name, TailLines: &lines, Previous: previous,
				})
				data, err := req.DoRaw(ctx)
				if err != nil {
					c.problem("log of %s/%s (previous=%t): %v", pod.Name, st.Name, previous, err)
					continue
				}
				name := st.Name + ".log"
				if previous {
					name = st.Name + ".previous.log"
				}
				path := filepath.Join("components", "logs", pod.Name, name)
				c.add(path, data)
				out = append(out, logTail{Instance: pod.Name + "/" + st.Name, Path: path})
			}
		}
	}
	return out
}

// processLogs reads dir/<instance>/<instance>.log of every instance.
func (c *collector) processLogs(dir string) []logTail {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			c.problem("component logs in %s: %v", dir, err)
		}
		return nil
	}
	var out []logTail
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		data, err := tailFile(filepath.Join(dir, e.Name(), e.Name()+".log"), c.o.LogLines)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			c.problem("log of %s: %v", e.Name(), err)
			continue
		}
		path := filepath.Join("components", "logs", e.Name()+".log")
		c.add(path, data)
		out = append(out, logTail{Instance: e.Name(), Path: path})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Instance < out[j].Instance })
	return out
}

// tailFile returns the last n lines of a file (of at most its last
// maxLogRead bytes).
func tailFile(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	offset := max(info.Size()-maxLogRead, 0)
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	return lastLines(data, n), nil
}

func lastLines(data []byte, n int) []byte {
	data = bytes.TrimRight(data, "\n")
	i := len(data)
	for range n {
		j := bytes.LastIndexByte(data[:i], '\n')
		if j < 0 {
			return append(data, '\n')
		}
		i = j
	}
	return append(data[i+1:], '\n')
}
