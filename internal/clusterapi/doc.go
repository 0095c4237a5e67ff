// Package clusterapi locates and runs the Cluster API manager: the binary
// bin/clusterapi/cluster-api-manager that `make build` builds from the
// module clusterapi/ (Cluster API's core controllers, from
// sigs.k8s.io/cluster-api) and the Cluster API CRDs it installs, copied
// beside it into bin/clusterapi/crds. The binary is a module of its own
// because Cluster API requires other k8s.io and controller-runtime versions
// than this module; nothing here imports Cluster API. See docs/machines.md.
package clusterapi
