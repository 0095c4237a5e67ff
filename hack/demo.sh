#!/usr/bin/env bash
# The main job: a management plane on this machine, one hosted cluster on it,
# used with a stock kubectl. Leaves both running; `make clean` removes them.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA_DIR=${1:-$PWD/.demo}
HS="bin/hypershift --data-dir $DATA_DIR"
KUBECTL=$(command -v kubectl || echo bin/kubectl)

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

step hypershift up --detach
$HS up --detach --metrics-bind-address 0

if ! $HS get clusters 2>/dev/null | grep -q '^clusters *demo '; then
  step hypershift create cluster none --name demo --wait
  $HS create cluster none --name demo --wait
fi

step hypershift create kubeconfig --name demo
$HS create kubeconfig --name demo -o "$DATA_DIR/demo.kubeconfig"
echo "wrote $DATA_DIR/demo.kubeconfig"

step kubectl get --raw /version
$KUBECTL --kubeconfig "$DATA_DIR/demo.kubeconfig" get --raw /version; echo
step kubectl create namespace demo-app
$KUBECTL --kubeconfig "$DATA_DIR/demo.kubeconfig" create namespace demo-app --dry-run=client -o yaml | $KUBECTL --kubeconfig "$DATA_DIR/demo.kubeconfig" apply -f -
step kubectl get namespaces
$KUBECTL --kubeconfig "$DATA_DIR/demo.kubeconfig" get namespaces

step hypershift get clusters
$HS get clusters
step hypershift describe cluster demo
$HS describe cluster demo

cat <<MSG

The hosted cluster "demo" is running. Use it with:
  export KUBECONFIG=$DATA_DIR/demo.kubeconfig
Stop everything (data kept):  bin/hypershift --data-dir $DATA_DIR down
Remove everything:            make clean
MSG
