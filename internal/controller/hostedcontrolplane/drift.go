package hostedcontrolplane

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// appliedRecord is what one apply left: enough to tell, at the next apply
// of the same rendering, whether someone changed or deleted the object in
// between.
type appliedRecord struct {
	rendered        [32]byte
	uid             types.UID
	generation      int64
	resourceVersion string
}

// driftRecords remembers, per connection to a hosted cluster, the result of
// the last apply of each object.
type driftRecords struct {
	mu      sync.Mutex
	applied map[string]appliedRecord
}

// unchanged returns the cached object when it is still what the last apply
// of the same rendering left (same UID and resourceVersion): applying it
// again would change nothing, so a pass in a steady cluster sends no
// request.
func (d *driftRecords) unchanged(rendered client.Object, cached cache.Indexer) (client.Object, error) {
	if cached == nil {
		return nil, nil
	}
	hash, err := renderedHash(rendered)
	if err != nil {
		return nil, err
	}
	key := rendered.GetName()
	if ns := rendered.GetNamespace(); ns != "" {
		key = ns + "/" + key
	}
	item, exists, err := cached.GetByKey(key)
	if err != nil || !exists {
		return nil, err
	}
	cur, ok := item.(client.Object)
	if !ok {
		return nil, nil
	}
	d.mu.Lock()
	prev, seen := d.applied[describeObject(rendered)]
	d.mu.Unlock()
	if !seen || prev.rendered != hash || prev.uid != cur.GetUID() || prev.resourceVersion != cur.GetResourceVersion() {
		return nil, nil
	}
	out, ok := cur.DeepCopyObject().(client.Object)
	if !ok {
		return nil, nil
	}
	out.GetObjectKind().SetGroupVersionKind(rendered.GetObjectKind().GroupVersionKind())
	return out, nil
}

func renderedHash(rendered client.Object) ([32]byte, error) {
	content, err := json.Marshal(rendered)
	if err != nil {
		return [32]byte{}, err
	}
	return sha256.Sum256(content), nil
}

func describeObject(o client.Object) string {
	kind := o.GetObjectKind().GroupVersionKind().Kind
	if ns := o.GetNamespace(); ns != "" {
		return kind + " " + ns + "/" + o.GetName()
	}
	return kind + " " + o.GetName()
}

// restored records the apply of rendered, which returned out, and says
// what it restored: an object deleted or changed in the hosted cluster
// since the previous apply of the same rendering. Nothing is said for the
// first apply over a connection or of a new rendering (an upgrade), whose
// writes are the control plane's own.
func (d *driftRecords) restored(rendered, out client.Object) (string, error) {
	hash, err := renderedHash(rendered)
	if err != nil {
		return "", err
	}
	rec := appliedRecord{
		rendered: hash, uid: out.GetUID(),
		generation: out.GetGeneration(), resourceVersion: out.GetResourceVersion(),
	}
	kind := rendered.GetObjectKind().GroupVersionKind().Kind
	what := describeObject(rendered)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.applied == nil {
		d.applied = map[string]appliedRecord{}
	}
	prev, seen := d.applied[what]
	d.applied[what] = rec
	if !seen || prev.rendered != rec.rendered {
		return "", nil
	}
	switch kind {
	case "Deployment", "DaemonSet":
		// Their controllers write status all the time; only a spec
		// change moves the generation.
		if prev.uid == rec.uid && prev.generation == rec.generation {
			return "", nil
		}
	default:
		if prev.uid == rec.uid && prev.resourceVersion == rec.resourceVersion {
			return "", nil
		}
	}
	if prev.uid != rec.uid {
		return fmt.Sprintf("%s was deleted in the hosted cluster; created again", what), nil
	}
	return fmt.Sprintf("%s was changed in the hosted cluster; changed back to what the control plane applies", what), nil
}
