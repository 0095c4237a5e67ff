package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"hypershift.dev/internal/runtime"
)

// File modes in the pods: readable by the containers' group (fsGroup), and
// secret files by nobody else.
const (
	secretFileMode int32 = 0o440
	plainFileMode  int32 = 0o444
)

// FilesDir is where a pod's containers find their files: the workload's
// Secret mounted as a directory, without subPath, so the kubelet replaces
// the files in place (atomically, by swapping the volume's ..data link)
// when the Secret changes, and a component re-reads its Reloadable files
// without a restart. A container's file <File.Path> of component C is
// FilesDir/C/<File.Path>; the arguments naming it under Dir are rewritten
// to point there (specArgs). Files keep their relative places, so a
// kubeconfig naming its client certificate beside it still finds it.
const FilesDir = "/var/run/hypershift-files"

// filesVolumeName is the volume of one container's files: every container
// mounts only its own files (the same Secret, its own items).
func filesVolumeName(component string) string { return "files-" + component }

// filesSecretName names the Secret of a workload's files.
func filesSecretName(component string) string { return component + "-files" }

// fileItem is one file of a workload: its key in the Secret and where it
// is mounted.
type fileItem struct {
	component string
	key       string
	// rel is <Component>/<File.Path>: the file's path in the Secret
	// volume, relative to FilesDir in the container.
	rel        string
	secret     bool
	reloadable bool
}

// validateFiles refuses file paths outside the component's directory and
// a component whose files volume cannot be named.
func validateFiles(s runtime.Spec) error {
	if len(s.Files) == 0 {
		return nil
	}
	if errs := validation.IsDNS1123Label(filesVolumeName(s.Component)); len(errs) > 0 {
		return fmt.Errorf("instance %s: spec.Component %q is too long for the volume of its files %q: %s", s.Name, s.Component, filesVolumeName(s.Component), strings.Join(errs, "; "))
	}
	for _, f := range s.Files {
		if f.Path == "" || path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || strings.HasPrefix(f.Path, "..") {
			return fmt.Errorf("instance %s: file path %q must be relative and clean (no .., no leading /)", s.Name, f.Path)
		}
	}
	return nil
}

// fileKey encodes a path as a Secret key ("/" is not allowed in keys).
func fileKey(rel string) string { return strings.ReplaceAll(rel, "/", "__") }

// files lists the workload's files, keys unique, sorted by key.
func (r renderer) files() ([]fileItem, map[string][]byte, error) {
	var items []fileItem
	data := map[string][]byte{}
	for _, s := range r.w.containers() {
		for _, f := range s.Files {
			rel := path.Join(s.Component, f.Path)
			key := fileKey(rel)
			if errs := validation.IsConfigMapKey(key); len(errs) > 0 {
				return nil, nil, fmt.Errorf("instance %s: file %q cannot be a Secret key (%s): %s", s.Name, f.Path, key, strings.Join(errs, "; "))
			}
			if _, dup := data[key]; dup {
				return nil, nil, fmt.Errorf("instance %s: file %q collides with another file of %s as Secret key %s (\"/\" is written \"__\")", s.Name, f.Path, r.w.component, key)
			}
			data[key] = f.Content
			items = append(items, fileItem{component: s.Component, key: key, rel: rel, secret: f.Secret, reloadable: f.Reloadable})
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].key < items[j].key })
	return items, data, nil
}

// filesSecret renders the Secret with every file of the workload's
// containers; nil when they have none.
func (r renderer) filesSecret() (*corev1.Secret, error) {
	items, data, err := r.files()
	if err != nil || len(items) == 0 {
		return nil, err
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: r.meta(filesSecretName(r.w.component)),
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}, nil
}

// filesHash identifies the files a running component does not re-read:
// every key, and the content of the files that are not Reloadable. A
// changed Reloadable file (a renewed certificate, a trust bundle) reaches
// the running pods through their directory mount and rolls nothing; any
// other change rolls the pods, which read the file only at start.
func (r renderer) filesHash() string {
	items, data, _ := r.files() // validated when the Secret was rendered
	h := sha256.New()
	for _, it := range items {
		if it.reloadable {
			fmt.Fprintf(h, "%s\x00reloadable\x00", it.key)
			continue
		}
		fmt.Fprintf(h, "%s\x00%d\x00", it.key, len(data[it.key]))
		h.Write(data[it.key])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// filesVolumes are the Secret's volumes, one per container with files,
// each mapping that container's keys back to their paths, with their mode.
func (r renderer) filesVolumes(secret *corev1.Secret) []corev1.Volume {
	items, _, _ := r.files() // validated when the Secret was rendered
	var volumes []corev1.Volume
	for _, s := range r.w.containers() {
		var keys []corev1.KeyToPath
		for _, it := range items {
			if it.component != s.Component {
				continue
			}
			mode := plainFileMode
			if it.secret {
				mode = secretFileMode
			}
			keys = append(keys, corev1.KeyToPath{Key: it.key, Path: it.rel, Mode: ptr.To(mode)})
		}
		if len(keys) == 0 {
			continue
		}
		volumes = append(volumes, corev1.Volume{Name: filesVolumeName(s.Component), VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: secret.Name, Items: keys, DefaultMode: ptr.To(plainFileMode),
		}}})
	}
	return volumes
}

// fileMounts mounts a container's files as a directory at FilesDir: never
// by subPath, which the kubelet binds once and never refreshes.
func fileMounts(s runtime.Spec) []corev1.VolumeMount {
	if len(s.Files) == 0 {
		return nil
	}
	return []corev1.VolumeMount{{Name: filesVolumeName(s.Component), MountPath: FilesDir, ReadOnly: true}}
}

// specArgs are the spec's arguments with every path of one of its files
// under Dir (a flag's value, or one element of a comma-separated value)
// replaced by the file's path under FilesDir.
func specArgs(s runtime.Spec) []string {
	if len(s.Files) == 0 {
		return s.Args
	}
	moved := make(map[string]string, len(s.Files))
	for _, f := range s.Files {
		rel := path.Join(s.Component, f.Path)
		moved[path.Join(Dir, rel)] = path.Join(FilesDir, rel)
	}
	out := make([]string, len(s.Args))
	for i, arg := range s.Args {
		prefix, value := "", arg
		if flag, v, ok := strings.Cut(arg, "="); ok && strings.HasPrefix(flag, "-") {
			prefix, value = flag+"=", v
		}
		parts := strings.Split(value, ",")
		for j, p := range parts {
			if to, ok := moved[p]; ok {
				parts[j] = to
			}
		}
		out[i] = prefix + strings.Join(parts, ",")
	}
	return out
}

// meta is the metadata of one of the workload's objects.
func (r renderer) meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: r.ref.Namespace, Labels: r.labels()}
}
