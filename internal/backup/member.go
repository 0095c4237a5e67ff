package backup

import (
	"errors"
	"strings"
)

// MemberFromEtcdArgs reads an etcd instance's data dir and member identity from
// its arguments, which the restored data dir must agree with.
func MemberFromEtcdArgs(args []string) (string, RestoreMember, error) {
	flags := map[string]string{}
	for _, arg := range args {
		if k, v, ok := strings.Cut(strings.TrimPrefix(arg, "--"), "="); ok {
			flags[k] = v
		}
	}
	m := RestoreMember{
		Name: flags["name"], PeerURL: flags["initial-advertise-peer-urls"],
		InitialCluster: flags["initial-cluster"], ClusterToken: flags["initial-cluster-token"],
	}
	dataDir := flags["data-dir"]
	if dataDir == "" || m.Name == "" || m.PeerURL == "" || m.InitialCluster == "" {
		return "", m, errors.New("the etcd arguments lack --data-dir, --name, --initial-advertise-peer-urls or --initial-cluster")
	}
	return dataDir, m, nil
}
