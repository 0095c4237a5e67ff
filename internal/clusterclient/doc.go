// Package clusterclient is what the commands that act on a hosted cluster
// through its management plane share: finding the management plane
// (Management, the --kubeconfig and --data-dir of every command), reading
// the HostedCluster (with an error that says what to do when it is not
// there), having the API server judge objects before any is created, and
// waiting on the cluster's status (Available, removal), saying each change
// of its conditions.
package clusterclient
