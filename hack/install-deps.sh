#!/usr/bin/env bash
# Installs what `make test` and `make demo` need that Go does not bring.
# Today that is a kubectl: the machine's own, or one built from the same
# k8s.io/kubernetes module as our components (nothing is downloaded).
set -euo pipefail
cd "$(dirname "$0")/.."

if command -v kubectl >/dev/null 2>&1; then
  echo "deps: using $(command -v kubectl)"
elif [ -x bin/kubectl ]; then
  echo "deps: using bin/kubectl"
else
  echo "deps: no kubectl on PATH; building bin/kubectl from k8s.io/kubernetes"
  go build -o bin/kubectl k8s.io/kubernetes/cmd/kubectl
fi
