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
)

// File modes in the pods: readable by the containers' group (fsGroup), and
// secret files by nobody else.
const (
	secretFileMode int32 = 0o440
	plainFileMode  int32 = 0o444
)

// filesVolume is the Secret volume holding every file of a workload.
const filesVolume = "files"

// filesSecretName names the Secret of a workload's files.
func filesSecretName(component string) string { return component + "-files" }

// fileItem is one file of a workload: its key in the Secret and where it
// is mounted.
type fileItem struct {
	component string
	key       string
	// rel is the file's path relative to Dir (<Component>/<File.Path>),
	// also its path in the Secret volume.
	rel    string
	secret bool
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
			items = append(items, fileItem{component: s.Component, key: key, rel: rel, secret: f.Secret})
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

// filesHash identifies the Secret's content, keys included.
func filesHash(secret *corev1.Secret) string {
	if secret == nil {
		return ""
	}
	keys := make([]string, 0, len(secret.Data))
	for k := range secret.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s\x00%d\x00", k, len(secret.Data[k]))
		h.Write(secret.Data[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// filesVolumeSource maps every key back to its path, with its mode.
func (r renderer) filesVolumeSource(secret *corev1.Secret) corev1.Volume {
	items, _, _ := r.files() // validated when the Secret was rendered
	var keys []corev1.KeyToPath
	for _, it := range items {
		mode := plainFileMode
		if it.secret {
			mode = secretFileMode
		}
		keys = append(keys, corev1.KeyToPath{Key: it.key, Path: it.rel, Mode: ptr.To(mode)})
	}
	return corev1.Volume{Name: filesVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: secret.Name, Items: keys, DefaultMode: ptr.To(plainFileMode),
	}}}
}

// fileMounts mounts a container's files one by one (subPath) over the
// shared directory, so the other files there stay writable and shared.
func (r renderer) fileMounts(component string) []corev1.VolumeMount {
	items, _, _ := r.files()
	var mounts []corev1.VolumeMount
	for _, it := range items {
		if it.component != component {
			continue
		}
		mounts = append(mounts, corev1.VolumeMount{
			Name: filesVolume, MountPath: path.Join(Dir, it.rel), SubPath: it.rel, ReadOnly: true,
		})
	}
	return mounts
}

// meta is the metadata of one of the workload's objects.
func (r renderer) meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: r.ref.Namespace, Labels: r.labels()}
}
