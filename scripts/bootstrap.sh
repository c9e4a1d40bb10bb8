#!/usr/bin/env bash
# bootstrap.sh - install what gpupool needs to build, run and test, from
# Debian's packages.  Idempotent: installs only what is missing.  Works as
# root, or through sudo for another user.
#
#   scripts/bootstrap.sh          build + run + test dependencies
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config
  libmicrohttpd-dev libjansson-dev libsqlite3-dev sqlite3 libsodium-dev
  libcurl4-openssl-dev libpq-dev libcmocka-dev
  postgresql
  curl jq valgrind
  openssl         # throw-away CA and certificates in tests/e2e/test_tls.sh
  poppler-utils   # pdftotext: text of PDF documents in knowledge bases
  chromium        # the web console's browser tests (tests/e2e/test_console.sh)
  systemd         # systemd-analyze verify on the packaged units (tests/e2e/test_package.sh)
  prometheus      # promtool and a scraping Prometheus (tests/e2e/test_metrics.sh)
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "bootstrap: all dependencies present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "bootstrap: missing packages (${missing[*]}) and not root, and no sudo" >&2
    exit 1
  fi
fi

echo "bootstrap: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# the packages are tools for the tests (prometheus, chromium...): their services are not
# started on this machine (where no policy says otherwise, one that refuses, removed after)
POLICY=/usr/sbin/policy-rc.d
if [ ! -e "$POLICY" ]; then
  printf '#!/bin/sh\n# bootstrap.sh: no service starts while it installs\nexit 101\n' |
    $SUDO tee "$POLICY" >/dev/null
  $SUDO chmod 755 "$POLICY"
  trap '$SUDO rm -f "$POLICY"' EXIT
fi
$SUDO apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "bootstrap: done"
