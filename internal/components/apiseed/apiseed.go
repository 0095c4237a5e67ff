// Package apiseed writes into a new control plane's empty etcd the objects
// that its kube-apiserver's post-start hooks would otherwise create one by
// one at first start: the bootstrap roles and bindings, the system priority
// classes, the API Priority and Fairness configuration and the system
// namespaces (docs/performance.md, "Seeded first start").
//
// The objects are computed in the API server's own process from the same
// upstream code its hooks use, and each is written with a UID and creation
// time of its own, so two clusters share no identity (the kube-system
// namespace's UID is commonly a cluster's ID). Nothing that carries a
// cluster's data is seeded (no Service, Endpoints, lease, ConfigMap or
// Secret): the API server writes those itself. A key is written only if no
// key exists under the prefix at all, with a compare per key, so the seed
// never overwrites: a restored, a used or a concurrently started cluster is
// left alone. The hooks still run afterwards and reconcile what they find,
// so a seed that differs from what the hooks want is corrected, never kept.
package apiseed

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	"github.com/spf13/pflag"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"hypershift.dev/internal/backup"
)

// DisableEnv is the environment variable that, set to "off" for the API
// server, turns the seed off: the API server then creates every bootstrap
// object itself, as upstream does (TestSeededAPIServerMatchesUpstream
// compares the two).
const DisableEnv = "HYPERSHIFT_APISERVER_SEED"

// Object is one object to seed: its resource (the etcd key's first
// segment, "clusterroles"), the version it is stored as, and the object,
// of a versioned type of client-go's scheme.
type Object struct {
	Resource     string
	GroupVersion schema.GroupVersion
	Object       metaObject
}

type metaObject interface {
	metav1.Object
	runtime.Object
}

// Target is where and whether an API server's command line lets a seed
// write.
type Target struct {
	Endpoints []string
	TLS       backup.EtcdTLS
	Prefix    string
	// RBAC: the API server authorizes with RBAC, so its hook writes the
	// bootstrap roles.
	RBAC bool
	// APF: API Priority and Fairness is on, so its hook writes its
	// configuration.
	APF bool
}

// Parse reads an API server's command line. It returns a reason, and no
// target, when the line asks for something the seed does not model: flags
// that change which objects the hooks create or how they are stored.
func Parse(args []string) (Target, string, error) {
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	fs.ParseErrorsAllowlist.UnknownFlags = true
	fs.SetOutput(&bytes.Buffer{})
	var (
		servers, ca, cert, key, prefix, authz, encryption string
		apf                                               bool
	)
	fs.StringVar(&servers, "etcd-servers", "", "")
	fs.StringVar(&ca, "etcd-cafile", "", "")
	fs.StringVar(&cert, "etcd-certfile", "", "")
	fs.StringVar(&key, "etcd-keyfile", "", "")
	fs.StringVar(&prefix, "etcd-prefix", "/registry", "")
	fs.StringVar(&authz, "authorization-mode", "", "")
	fs.StringVar(&encryption, "encryption-provider-config", "", "")
	fs.BoolVar(&apf, "enable-priority-and-fairness", true, "")
	// Flags that change the objects or their storage: not seeded.
	unmodelled := []string{"feature-gates", "runtime-config", "emulated-version", "etcd-servers-overrides", "storage-media-type", "storage-backend", "authorization-config"}
	for _, name := range unmodelled {
		fs.String(name, "", "")
	}
	if err := fs.Parse(args); err != nil {
		return Target{}, "", fmt.Errorf("read the API server's flags: %w", err)
	}
	for _, name := range unmodelled {
		if fs.Changed(name) {
			return Target{}, "--" + name + " is set", nil
		}
	}
	if servers == "" || ca == "" || cert == "" || key == "" {
		return Target{}, "etcd is not reached over TLS with a client certificate", nil
	}
	t := Target{Endpoints: strings.Split(servers, ","), Prefix: path.Clean("/" + prefix), APF: apf}
	for _, m := range strings.Split(authz, ",") {
		t.RBAC = t.RBAC || m == "RBAC"
	}
	if encryption != "" {
		encrypted, err := encryptedResources(encryption)
		if err != nil {
			return Target{}, "", err
		}
		if len(encrypted) > 0 {
			return Target{}, "the encryption configuration covers " + strings.Join(encrypted, ", "), nil
		}
	}
	var err error
	for _, f := range []struct {
		path string
		into *[]byte
	}{{ca, &t.TLS.CAPEM}, {cert, &t.TLS.CertPEM}, {key, &t.TLS.KeyPEM}} {
		if *f.into, err = os.ReadFile(f.path); err != nil {
			return Target{}, "", fmt.Errorf("read etcd credentials: %w", err)
		}
	}
	return t, "", nil
}

// seededResources are the resources a seed may write, as an encryption
// configuration names them.
var seededResources = map[string]bool{
	"namespaces": true, "clusterroles.rbac.authorization.k8s.io": true,
	"clusterrolebindings.rbac.authorization.k8s.io": true, "roles.rbac.authorization.k8s.io": true,
	"rolebindings.rbac.authorization.k8s.io": true, "priorityclasses.scheduling.k8s.io": true,
	"flowschemas.flowcontrol.apiserver.k8s.io": true, "prioritylevelconfigurations.flowcontrol.apiserver.k8s.io": true,
}

// encryptedResources lists what an encryption configuration would encrypt
// of the seeded resources (a wildcard counts as all of them): those must go
// through the API server's encryption, so a seed then writes nothing.
func encryptedResources(file string) ([]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read the encryption configuration: %w", err)
	}
	var cfg struct {
		Resources []struct {
			Resources []string `json:"resources"`
		} `json:"resources"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("read the encryption configuration %s: %w", file, err)
	}
	var out []string
	for _, r := range cfg.Resources {
		for _, name := range r.Resources {
			if seededResources[name] || strings.Contains(name, "*") {
				out = append(out, name)
			}
		}
	}
	return out, nil
}

// Result says what a seed did.
type Result struct {
	// Written is how many objects were written; 0 with Skipped set when
	// etcd was not empty.
	Written int
	Skipped string
}

// batch is how many keys one transaction writes: etcd's default
// --max-txn-ops is 128, and each key takes a compare and a put.
const batch = 100

// Seed writes objects into the target's etcd if nothing is stored under its
// prefix. A failure part-way leaves the objects written so far, which the
// API server's hooks then find as if they had written them.
func Seed(ctx context.Context, t Target, objects []Object) (Result, error) {
	tlsConfig, err := t.TLS.Config()
	if err != nil {
		return Result{}, err
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: t.Endpoints, TLS: tlsConfig, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
	})
	if err != nil {
		return Result{}, fmt.Errorf("etcd client for %v: %w", t.Endpoints, err)
	}
	defer func() { _ = cli.Close() }()
	existing, err := cli.Get(ctx, t.Prefix+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return Result{}, fmt.Errorf("read etcd: %w", err)
	}
	if existing.Count > 0 {
		return Result{Skipped: fmt.Sprintf("etcd holds %d keys under %s", existing.Count, t.Prefix)}, nil
	}
	kvs, err := Encode(t.Prefix, objects, time.Now())
	if err != nil {
		return Result{}, err
	}
	written := 0
	for start := 0; start < len(kvs); start += batch {
		part := kvs[start:min(start+batch, len(kvs))]
		var cmps []clientv3.Cmp
		var puts []clientv3.Op
		for _, kv := range part {
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(kv.Key), "=", 0))
			puts = append(puts, clientv3.OpPut(kv.Key, string(kv.Value)))
		}
		resp, err := cli.Txn(ctx).If(cmps...).Then(puts...).Commit()
		if err != nil {
			return Result{Written: written}, fmt.Errorf("write to etcd: %w", err)
		}
		if !resp.Succeeded {
			return Result{Written: written, Skipped: "another writer created a seeded key meanwhile"}, nil
		}
		written += len(part)
	}
	return Result{Written: written}, nil
}

// KeyValue is one encoded object and its etcd key.
type KeyValue struct {
	Key   string
	Value []byte
}

// Encode renders objects as the API server stores them (protobuf, its
// default storage media type), each with a new UID and the creation time
// now, under prefix/<resource>/[<namespace>/]<name>. The objects passed in
// are not changed.
func Encode(prefix string, objects []Object, now time.Time) ([]KeyValue, error) {
	codecs := serializer.NewCodecFactory(scheme.Scheme)
	pb := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	seen := map[string]bool{}
	out := make([]KeyValue, 0, len(objects))
	for _, o := range objects {
		obj, ok := o.Object.DeepCopyObject().(metaObject)
		if !ok {
			return nil, fmt.Errorf("%s %s: not an object with metadata", o.Resource, o.Object.GetName())
		}
		if obj.GetName() == "" || obj.GetResourceVersion() != "" || obj.GetUID() != "" {
			return nil, fmt.Errorf("%s %q: a seed object has a name and no UID or resourceVersion", o.Resource, obj.GetName())
		}
		obj.SetUID(uuid.NewUUID())
		obj.SetCreationTimestamp(metav1.NewTime(now))
		key := path.Join(prefix, o.Resource, obj.GetNamespace(), obj.GetName())
		if seen[key] {
			return nil, fmt.Errorf("%s is seeded twice", key)
		}
		seen[key] = true
		var buf bytes.Buffer
		if err := codecs.EncoderForVersion(pb, o.GroupVersion).Encode(obj, &buf); err != nil {
			return nil, fmt.Errorf("encode %s: %w", key, err)
		}
		out = append(out, KeyValue{Key: key, Value: buf.Bytes()})
	}
	return out, nil
}
