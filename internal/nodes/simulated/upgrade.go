package simulated

// restartUpgraded stops the nodes whose machine now names another kubelet
// version than the one they run, keeping their certificates, so that
// applyConfig starts them again at the new version under the same name —
// as a kubelet restarted with a new binary re-registers its existing Node.
// The NodePool controller drains a node before changing its version.
func (a *Agent) restartUpgraded(cfg Config, want map[string]Machine) {
	a.mu.Lock()
	var restart []*node
	for name, n := range a.nodes {
		m, ok := want[name]
		if ok && m.Version(cfg) != n.m.Version(n.cfg) {
			restart = append(restart, n)
			delete(a.nodes, name)
		}
	}
	a.mu.Unlock()
	for _, n := range restart {
		n.log.Info("restarting node at a new kubelet version", "from", n.m.Version(n.cfg), "to", want[n.m.Name].Version(cfg))
		n.cancel()
	}
	for _, n := range restart {
		<-n.done
	}
}
