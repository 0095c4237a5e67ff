package runtime_test

import (
	"testing"

	"hypershift.dev/internal/runtime"
)

func TestHashCoversWhatRuns(t *testing.T) {
	base := func() runtime.Spec {
		return runtime.Spec{
			Name: "etcd-0", Component: "etcd", Args: []string{"--name=etcd-0"},
			Files: []runtime.File{{Path: "a", Content: []byte("1")}, {Path: "b", Content: []byte("2"), Secret: true}},
		}
	}
	h := base().Hash()
	changes := map[string]func(*runtime.Spec){
		"an argument":    func(s *runtime.Spec) { s.Args[0] = "--name=etcd-1" },
		"a file's bytes": func(s *runtime.Spec) { s.Files[1].Content = []byte("3") },
		"the env":        func(s *runtime.Spec) { s.Env = []string{"GOGC=50"} },
		"the version":    func(s *runtime.Spec) { s.Version = "v1.36.3" },
	}
	for what, change := range changes {
		s := base()
		change(&s)
		if s.Hash() == h {
			t.Errorf("changing %s keeps the hash", what)
		}
	}
	same := map[string]func(*runtime.Spec){
		"the stop order": func(s *runtime.Spec) { s.StopLast = true },
	}
	for what, change := range same {
		s := base()
		change(&s)
		if s.Hash() != h {
			t.Errorf("changing %s changes the hash: an instance would restart for nothing", what)
		}
	}
}

// TestHashWithoutVersionIsUnchanged pins the hash of a spec that chose no
// release to its value from before Spec.Version existed: adding the field
// must not restart every running instance.
func TestHashWithoutVersionIsUnchanged(t *testing.T) {
	s := runtime.Spec{
		Name: "etcd-0", Component: "etcd", Args: []string{"--name=etcd-0"},
		Files: []runtime.File{{Path: "a", Content: []byte("1")}},
	}
	if got, want := s.Hash(), "513434ad2e1bc5e5"; got != want {
		t.Errorf("Hash() = %s, want %s", got, want)
	}
}

func TestHashLeavesOutReloadableContent(t *testing.T) {
	base := runtime.Spec{Name: "a", Files: []runtime.File{{Path: "server.crt", Content: []byte("one"), Reloadable: true}, {Path: "ca.crt", Content: []byte("ca")}}}
	renewed := base
	renewed.Files = []runtime.File{{Path: "server.crt", Content: []byte("two"), Reloadable: true}, {Path: "ca.crt", Content: []byte("ca")}}
	if base.Hash() != renewed.Hash() {
		t.Error("a reloadable file's content changed the hash")
	}
	moved := base
	moved.Files = []runtime.File{{Path: "tls.crt", Content: []byte("one"), Reloadable: true}, {Path: "ca.crt", Content: []byte("ca")}}
	if base.Hash() == moved.Hash() {
		t.Error("a reloadable file's path is not in the hash")
	}
	ca := base
	ca.Files = []runtime.File{{Path: "server.crt", Content: []byte("one"), Reloadable: true}, {Path: "ca.crt", Content: []byte("new ca")}}
	if base.Hash() == ca.Hash() {
		t.Error("a file that is not reloadable left the hash unchanged")
	}
}
