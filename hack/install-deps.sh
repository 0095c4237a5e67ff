#!/usr/bin/env bash
# Installs what `make test` and `make demo` need that Go does not bring:
# - a kubectl: the machine's own, or one built from the same k8s.io/kubernetes
#   module as our components (nothing is downloaded);
# - for real nodes (`hypershift join`, platform None): Debian's containerd,
#   runc, containernetworking-plugins and iptables, installed when running as
#   root. Without root the real-node test skips and says so;
# - Azurite (npm) for the Azure Blob backup tests, into bin/tools/azurite.
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

node_packages=(containerd runc containernetworking-plugins iptables)
missing=()
command -v containerd >/dev/null 2>&1 || missing+=(containerd)
command -v runc >/dev/null 2>&1 || missing+=(runc)
[ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
command -v iptables-save >/dev/null 2>&1 || missing+=(iptables)
if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: real-node packages present (${node_packages[*]})"
elif [ "$(id -u)" -eq 0 ]; then
  echo "deps: installing ${missing[*]} from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends "${missing[@]}" || {
    apt-get update && apt-get install -y --no-install-recommends "${missing[@]}"
  }
else
  echo "deps: not root, so not installing ${missing[*]}: the real-node test will skip"
fi

# The dashboard's browser test drives Debian's chromium headless.
if command -v chromium >/dev/null 2>&1; then
  echo "deps: chromium present"
elif [ "$(id -u)" -eq 0 ]; then
  echo "deps: installing chromium from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends chromium || {
    apt-get update && apt-get install -y --no-install-recommends chromium
  }
else
  echo "deps: not root, so not installing chromium: the dashboard's browser test will skip"
fi

# Azurite runs on Node.js: Debian's nodejs and npm when missing (as root).
if ! command -v npm >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
  echo "deps: installing nodejs and npm from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends nodejs npm || {
    apt-get update && apt-get install -y --no-install-recommends nodejs npm
  }
fi

# The Azure Blob backup tests run Azurite, Microsoft's storage emulator, from
# npm (pinned; 3.35 is the last release that runs on Node 20).
azurite_version=3.35.0
azurite_dir=bin/tools/azurite
if [ -x "$azurite_dir/node_modules/.bin/azurite-blob" ] &&
  grep -q "\"version\": \"$azurite_version\"" "$azurite_dir/node_modules/azurite/package.json" 2>/dev/null; then
  echo "deps: azurite $azurite_version present"
elif command -v npm >/dev/null 2>&1; then
  echo "deps: installing azurite $azurite_version into $azurite_dir"
  npm install --no-audit --no-fund --silent --prefix "$azurite_dir" "azurite@$azurite_version"
else
  echo "deps: no npm, so not installing azurite: the Azure Blob backup tests will skip (and fail with CI=true)"
fi
