#!/usr/bin/env bash
# The main job: a management plane on this machine, one hosted cluster on it,
# used with a stock kubectl. As root, the cluster is of platform host: its
# NodePool of two gets two real nodes from Cluster API — two machines of this
# host (docs/machines.md) — and runs an app on both, reached through a
# Service. Leaves everything running; `make clean` removes it.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA_DIR=${1:-$PWD/.demo}
HS="bin/hypershift --data-dir $DATA_DIR"
KUBECTL=$(command -v kubectl || echo bin/kubectl)
MACHINES_DIR=$DATA_DIR-machines
MACHINE="bin/hypershift machine --machines-dir $MACHINES_DIR"
start=$(date +%s)

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
k() { $KUBECTL --kubeconfig "$DATA_DIR/demo.kubeconfig" "$@"; }

with_nodes=false
if [ "$(id -u)" = 0 ]; then
  with_nodes=true
else
  echo "not root: the demo cluster gets no nodes (machines and real nodes need root)"
fi

machines=()
if $with_nodes; then
  step hypershift machine network
  $MACHINE network
  # Machines of Host pools are made there; the hosted API servers listen
  # on its gateway, which the machines reach.
  machines=(--machines-dir "$MACHINES_DIR")
fi

step hypershift up --detach "${machines[@]}"
$HS up --detach --metrics-bind-address 0 "${machines[@]}"

if ! $HS get clusters 2>/dev/null | grep -q '^clusters *demo '; then
  if $with_nodes; then
    step hypershift create cluster host --name demo --node-pool-replicas 2 --wait
    $HS create cluster host --name demo --node-pool-replicas 2 --wait
  else
    step hypershift create cluster none --name demo --wait
    $HS create cluster none --name demo --wait
  fi
fi

step hypershift create kubeconfig --name demo
$HS create kubeconfig --name demo -o "$DATA_DIR/demo.kubeconfig"
echo "wrote $DATA_DIR/demo.kubeconfig"

step kubectl get --raw /version
k get --raw /version; echo

if $with_nodes; then
  step hypershift get machines "(Cluster API made them for the NodePool)"
  $HS get machines

  # The app: a static program in a one-layer image, loaded into each node.
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$DATA_DIR/app" ./hack/demo/app
  go run ./hack/demo/image -name hypershift.demo/app:1 -o "$DATA_DIR/app.tar" "$DATA_DIR/app"
  mapfile -t NODES < <(k get nodes -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
  for m in "${NODES[@]}"; do
    $MACHINE exec "$m" -- "$PWD/bin/hypershift" node load-image "$DATA_DIR/app.tar"
  done
  step kubectl get nodes -o wide
  k wait --for=condition=Ready node --all --timeout=120s >/dev/null
  k get nodes -o wide

  step kubectl apply -f app.yaml "(2 replicas, one per node; a NodePort Service)"
  k apply -f - <<'YAML'
apiVersion: v1
kind: Namespace
metadata:
  name: demo-app
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
  namespace: demo-app
spec:
  replicas: 2
  selector:
    matchLabels: {app: demo}
  template:
    metadata:
      labels: {app: demo}
    spec:
      topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: kubernetes.io/hostname
        whenUnsatisfiable: DoNotSchedule
        labelSelector:
          matchLabels: {app: demo}
      containers:
      - name: app
        image: hypershift.demo/app:1
        imagePullPolicy: Never
        ports:
        - containerPort: 8080
        env:
        - name: POD_NAME
          valueFrom: {fieldRef: {fieldPath: metadata.name}}
        - name: NODE_NAME
          valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
        readinessProbe:
          httpGet: {path: /, port: 8080}
---
apiVersion: v1
kind: Service
metadata:
  name: app
  namespace: demo-app
spec:
  type: NodePort
  selector: {app: demo}
  ports:
  - port: 80
    targetPort: 8080
YAML
  k -n demo-app rollout status deployment/app --timeout=120s
  k -n demo-app get pods -o wide

  port=$(k -n demo-app get service app -o jsonpath='{.spec.ports[0].nodePort}')
  address=$(k get node "${NODES[0]}" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}')
  step "curl http://$address:$port/  (the Service, through node ${NODES[0]}; 6 requests)"
  for _ in 1 2 3 4 5 6; do
    curl -sS --max-time 5 "http://$address:$port/"
  done
else
  step kubectl create namespace demo-app
  k create namespace demo-app --dry-run=client -o yaml | k apply -f -
  step kubectl get namespaces
  k get namespaces
fi

step hypershift get clusters
$HS get clusters
step hypershift describe cluster demo
$HS describe cluster demo

cat <<MSG

The hosted cluster "demo" is running ($(($(date +%s) - start)) s). Use it with:
  export KUBECONFIG=$DATA_DIR/demo.kubeconfig
Stop everything (data kept):  bin/hypershift --data-dir $DATA_DIR down
Remove everything:            make clean
MSG
