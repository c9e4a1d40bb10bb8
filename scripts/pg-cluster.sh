#!/usr/bin/env bash
# pg-cluster.sh - a throw-away PostgreSQL cluster for the tests (Debian's
# postgresql package, installed by scripts/bootstrap.sh).
#
#   scripts/pg-cluster.sh start DIR   initdb in DIR, start on a free loopback
#                                     port, make the application role; prints
#                                     GP_TEST_PG=postgresql://gpupool@127.0.0.1:PORT
#   scripts/pg-cluster.sh stop DIR    stop it and remove DIR
#
# The application role `gpupool` is an ordinary role (not a superuser, so
# row-level security applies to it) that may create databases: every test
# makes its own database on this cluster, and so owns its tables.  A second
# role, `gpupool_app`, owns nothing: tests that split the owner (migrations,
# `gpupool migrate --grant gpupool_app`) from the servers' role connect as
# it.  Authentication is `trust` on loopback only; durability is off (fsync)
# because the cluster is thrown away.  As root, the server runs as the
# `postgres` system user (initdb refuses root).
set -euo pipefail

pg_bin() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$d" ] && [ -x "$d/initdb" ] || {
    echo "pg-cluster: PostgreSQL server binaries not found; run scripts/bootstrap.sh" >&2
    exit 1
  }
  echo "$d"
}

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# a loopback port nobody listens on now (start retries with another if it is taken meanwhile)
free_port() {
  local p i
  for ((i = 0; i < 200; i++)); do
    p=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  return 1
}

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || {
  echo "usage: $0 start|stop DIR" >&2
  exit 2
}

case "$cmd" in
start)
  bin=$(pg_bin)
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ "$(id -u)" = 0 ]; then
    chown postgres: "$dir"
  fi
  as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --no-locale -E UTF8 \
    >"$dir/initdb.log" 2>&1 || {
    cat "$dir/initdb.log" >&2
    exit 1
  }
  started=0
  for _ in 1 2 3 4 5; do
    port=$(free_port)
    if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
      -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir \
          -c max_connections=400 -c fsync=off -c synchronous_commit=off \
          -c full_page_writes=off -c shared_buffers=128MB" >/dev/null; then
      started=1
      break
    fi
  done
  [ "$started" = 1 ] || {
    cat "$dir/server.log" >&2
    exit 1
  }
  "$bin/psql" -X -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 \
    -c "CREATE ROLE gpupool LOGIN CREATEDB NOSUPERUSER NOBYPASSRLS" \
    -c "CREATE ROLE gpupool_app LOGIN NOCREATEDB NOSUPERUSER NOBYPASSRLS" >/dev/null
  echo "$port" >"$dir/port"
  echo "GP_TEST_PG=postgresql://gpupool@127.0.0.1:$port"
  ;;
stop)
  [ -d "$dir/data" ] || exit 0
  bin=$(pg_bin)
  as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
  ;;
*)
  echo "usage: $0 start|stop DIR" >&2
  exit 2
  ;;
esac
