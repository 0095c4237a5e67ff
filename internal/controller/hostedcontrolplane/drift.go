package hostedcontrolplane

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"
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

// restored records the apply of rendered, which returned out, and says
// what it restored: an object deleted or changed in the hosted cluster
// since the previous apply of the same rendering. Nothing is said for the
// first apply over a connection or of a new rendering (an upgrade), whose
// writes are the control plane's own.
func (d *driftRecords) restored(rendered, out client.Object) (string, error) {
	content, err := json.Marshal(rendered)
	if err != nil {
		return "", err
	}
	rec := appliedRecord{
		rendered: sha256.Sum256(content), uid: out.GetUID(),
		generation: out.GetGeneration(), resourceVersion: out.GetResourceVersion(),
	}
	kind := rendered.GetObjectKind().GroupVersionKind().Kind
	what := kind + " " + rendered.GetName()
	if ns := rendered.GetNamespace(); ns != "" {
		what = kind + " " + ns + "/" + rendered.GetName()
	}
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
