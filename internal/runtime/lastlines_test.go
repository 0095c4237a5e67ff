package runtime

import "testing"

// etcd's fatal line, as it logs a data directory it may not read: the
// cause must survive the cut to the end that status messages make.
func TestLastLinesTellsStructuredLines(t *testing.T) {
	log := `{"level":"warn","ts":"2026-11-30T23:42:07.818586Z","caller":"embed/config.go:956","msg":"Running http and grpc server on single port. This is not recommended for production."}
{"level":"fatal","ts":"2026-11-30T23:42:07.818685Z","caller":"etcdmain/etcd.go:201","msg":"failed to list data directory","dir":"/var/lib/etcd/data","error":"open /var/lib/etcd/data: permission denied","stacktrace":"go.etcd.io/etcd/server/v3/etcdmain.identifyDataDirOrDie\n\t/root/go/pkg/mod/go.etcd.io/etcd/server/v3@v3.7.2/etcdmain/etcd.go:201\ngo.etcd.io/etcd/server/v3/etcdmain.startEtcdOrProxyV2"}
E1130 23:42:07.818685   42 run.go:72] "command failed" err="plain klog lines are kept"
{not json
`
	want := "warn: Running http and grpc server on single port. This is not recommended for production.\n" +
		"fatal: failed to list data directory: open /var/lib/etcd/data: permission denied\n" +
		`E1130 23:42:07.818685   42 run.go:72] "command failed" err="plain klog lines are kept"` + "\n" +
		"{not json"
	if got := LastLines(log, 4); got != want {
		t.Errorf("LastLines:\n%s\nwant:\n%s", got, want)
	}
	if got := LastLines("a\nb\nc\n", 2); got != "b\nc" {
		t.Errorf("LastLines of plain lines: %q", got)
	}
}
