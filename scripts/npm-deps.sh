#!/usr/bin/env bash
# npm-deps.sh - install what the tests' Node.js side needs: node and npm
# from Debian's packages when missing, then tests/gateway's node_modules (the
# official openai client) and tests/console's (playwright-core, which drives
# the system Chromium that bootstrap.sh installs), both pinned by their
# package-lock.json.  Idempotent:
# quick when everything is present and node_modules is newer than the lock.
# Works as root, or through sudo for another user.
#
#   scripts/npm-deps.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

missing=()
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm  >/dev/null 2>&1 || missing+=(npm)

if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      SUDO="sudo"
    else
      echo "npm-deps: missing packages (${missing[*]}) and not root, and no sudo" >&2
      exit 1
    fi
  fi
  echo "npm-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# node_modules/.package-lock.json is rewritten by every npm install/ci, so it
# is the reliable timestamp of the last install.
for DIR in "$ROOT/tests/gateway" "$ROOT/tests/console"; do
  name=${DIR#"$ROOT"/}
  stamp="$DIR/node_modules/.package-lock.json"
  if [ -f "$stamp" ] && [ ! "$DIR/package-lock.json" -nt "$stamp" ] \
     && [ ! "$DIR/package.json" -nt "$stamp" ]; then
    echo "npm-deps: $name/node_modules up to date"
    continue
  fi
  echo "npm-deps: npm ci in $name"
  (cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error)
done
echo "npm-deps: done"
