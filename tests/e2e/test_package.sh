#!/usr/bin/env bash
# test_package.sh - the Debian package (docs/operations.md, "Install from the
# Debian package"): `cpack -G DEB` on the build folder of GPUPOOL_BIN (no
# compiling: the binary already built), into this test's temporary folder;
# the package's control data (name, version, dependencies, conffiles,
# maintainer scripts, also run against logging stubs) and files (dpkg-deb -I /
# -f / -c); `systemd-analyze verify` on both units in the extracted tree and
# `systemd-analyze security` on the server's; then the server started the
# way gpupool-server.service starts it (its ExecStart, User=, UMask= and
# /etc/gpupool/server.conf, every path moved into the temporary folder; as an
# unprivileged uid when the test runs as root) answers /healthz, and the agent
# started the way gpupool-agent.service starts it (EnvironmentFile=
# /etc/gpupool/agent.conf) joins it.  Nothing is installed on this machine:
# the package is unpacked with dpkg-deb -x into the temporary folder.
. "$(dirname "$0")/lib.sh"

SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(dirname "$GPUPOOL_BIN")
for t in cpack dpkg-deb dpkg-shlibdeps; do
    command -v "$t" >/dev/null || fail "the test needs '$t' (scripts/bootstrap.sh installs it)"
done
[ -e "$BUILD/CPackConfig.cmake" ] || fail "$BUILD has no CPackConfig.cmake: configure it with cmake"

# ---------------------------------------------------------------- build the package
note "cpack -G DEB on $BUILD"
PKG=$E2E_TMP/pkg
mkdir -p "$PKG"
E2E_LAST_CMD="cpack"
(cd "$PKG" && timeout 120 cpack -G DEB --config "$BUILD/CPackConfig.cmake" -B "$PKG") \
    >"$E2E_TMP/cpack.out" 2>&1 || {
    _show cpack "$E2E_TMP/cpack.out"
    fail "cpack failed"
}
_pass
DEBS=("$PKG"/gpupool_*.deb)
if [ ${#DEBS[@]} != 1 ] || [ ! -f "${DEBS[0]}" ]; then
    fail "expected one gpupool_*.deb in $PKG, got: ${DEBS[*]}"
fi
DEB=${DEBS[0]}
VERSION=$("$GPUPOOL_BIN" --version | awk '{print $2}')
ARCH=$(dpkg --print-architecture)
assert_eq "$(basename "$DEB")" "gpupool_${VERSION}_${ARCH}.deb" "package file name"

# ---------------------------------------------------------------- control data
note "control data: dpkg-deb -f / -I"
assert_eq "$(dpkg-deb -f "$DEB" Package)" gpupool "Package"
assert_eq "$(dpkg-deb -f "$DEB" Version)" "$VERSION" "Version (the project's, as gpupool --version)"
assert_eq "$(dpkg-deb -f "$DEB" Architecture)" "$ARCH" "Architecture"
DEPENDS=$(dpkg-deb -f "$DEB" Depends)
for lib in libc6 libmicrohttpd12 libcurl4 libjansson4 libsqlite3-0 libpq5 libsodium23 passwd; do
    assert_match "$DEPENDS" "(^|, )$lib( |,|$)" "Depends names $lib"
done
assert_ne "$(dpkg-deb -f "$DEB" Description)" "" "Description"
dpkg-deb -I "$DEB" >"$E2E_TMP/info" || fail "dpkg-deb -I failed"
for f in control conffiles md5sums postinst prerm postrm; do
    assert_file_contains "$E2E_TMP/info" " $f " "control member $f"
done
CTRL=$E2E_TMP/control
mkdir -p "$CTRL"
dpkg-deb -e "$DEB" "$CTRL" || fail "dpkg-deb -e failed"
assert_eq "$(sort "$CTRL/conffiles" | tr '\n' ' ')" "/etc/gpupool/agent.conf /etc/gpupool/server.conf " \
    "conffiles"
for s in postinst prerm postrm; do
    [ -x "$CTRL/$s" ] || fail "maintainer script $s is not executable"
    sh -n "$CTRL/$s" || fail "maintainer script $s: sh -n failed"
    _pass
done
assert_file_contains "$CTRL/postinst" "useradd --system" "postinst makes a system user"
assert_file_contains "$CTRL/postinst" "--shell /usr/sbin/nologin" "the user cannot log in"
assert_file_contains "$CTRL/postinst" "try-restart gpupool-server.service" "an upgrade restarts the server"

# The maintainer scripts, run with every command they call replaced by a stub that
# logs its arguments (nothing on this machine changes): a fresh install makes the
# user and group and starts nothing; an upgrade restarts the running units (where
# systemd runs); an existing user is kept.
note "maintainer scripts, against logging stubs"
STUBS=$E2E_TMP/stubs
mkdir -p "$STUBS"
for c in getent groupadd useradd install systemctl; do
    # shellcheck disable=SC2016  # $* and ${GETENT_RC} are the stub's
    printf '#!/bin/sh\necho "%s $*" >>"%s/calls"\n[ %s != getent ] || exit "${GETENT_RC:-2}"\n' \
        "$c" "$E2E_TMP" "$c" >"$STUBS/$c"
    chmod +x "$STUBS/$c"
done
# run_script NAME ARGS...: the maintainer script with the stubs only -> RC, $E2E_TMP/calls
run_script() {
    local name=$1
    shift
    : >"$E2E_TMP/calls"
    E2E_LAST_CMD="$name $*"
    PATH=$STUBS /bin/sh "$CTRL/$name" "$@" >"$OUT_FILE" 2>"$ERR_FILE"
    RC=$?
}
SYSTEMD_UP=0
[ -d /run/systemd/system ] && SYSTEMD_UP=1
run_script postinst configure
assert_rc 0
assert_file_contains "$E2E_TMP/calls" "groupadd --system gpupool"
assert_file_contains "$E2E_TMP/calls" "useradd --system --gid gpupool --home-dir /var/lib/gpupool"
assert_file_contains "$E2E_TMP/calls" "install -d -m 0700 /var/lib/gpupool-agent"
[ -d /var/lib/gpupool ] || assert_file_contains "$E2E_TMP/calls" \
    "install -d -m 0700 -o gpupool -g gpupool /var/lib/gpupool"
assert_file_lacks "$E2E_TMP/calls" "try-restart"
assert_file_lacks "$E2E_TMP/calls" "systemctl start"
assert_file_lacks "$E2E_TMP/calls" "systemctl enable"
GETENT_RC=0 run_script postinst configure 0.0.1
assert_rc 0
assert_file_lacks "$E2E_TMP/calls" "useradd"
assert_file_lacks "$E2E_TMP/calls" "groupadd"
if [ "$SYSTEMD_UP" == 1 ]; then
    assert_file_contains "$E2E_TMP/calls" "systemctl try-restart gpupool-server.service gpupool-agent.service"
else
    assert_file_lacks "$E2E_TMP/calls" "systemctl"
fi
run_script postinst bogus
assert_rc 1
run_script prerm upgrade 0.2.0
assert_rc 0
assert_file_lacks "$E2E_TMP/calls" "systemctl stop"
run_script prerm remove
assert_rc 0
if [ "$SYSTEMD_UP" == 1 ]; then
    assert_file_contains "$E2E_TMP/calls" "systemctl stop gpupool-server.service gpupool-agent.service"
fi
run_script postrm purge
assert_rc 0
assert_file_lacks "$E2E_TMP/calls" "userdel"
assert_file_lacks "$E2E_TMP/calls" "rm "

# ---------------------------------------------------------------- files
note "files: dpkg-deb -c"
dpkg-deb -c "$DEB" | awk '{print $1, $2, $6}' >"$E2E_TMP/files"
for want in "-rwxr-xr-x root/root ./usr/bin/gpupool" \
    "-rw-r--r-- root/root ./usr/lib/systemd/system/gpupool-server.service" \
    "-rw-r--r-- root/root ./usr/lib/systemd/system/gpupool-agent.service" \
    "-rw-r--r-- root/root ./etc/gpupool/server.conf" \
    "-rw-r--r-- root/root ./etc/gpupool/agent.conf" \
    "-rw-r--r-- root/root ./usr/share/bash-completion/completions/gpupool" \
    "-rw-r--r-- root/root ./usr/share/doc/gpupool/operations.md" \
    "-rw-r--r-- root/root ./usr/share/doc/gpupool/README.md" \
    "-rw-r--r-- root/root ./usr/share/doc/gpupool/copyright" \
    "-rw-r--r-- root/root ./usr/share/doc/gpupool/changelog.gz" \
    "-rw-r--r-- root/root ./usr/share/man/man1/gpupool.1.gz"; do
    assert_file_contains "$E2E_TMP/files" "$want"
done
assert_file_lacks "$E2E_TMP/files" "gpupool-bench"
assert_eq "$(awk '{print $3}' "$E2E_TMP/files" | grep -cvE '^\./(etc/gpupool|usr)(/|$)|^\./$|^\./etc/$')" 0 \
    "files outside /usr and /etc/gpupool"

ROOT=$E2E_TMP/root
dpkg-deb -x "$DEB" "$ROOT" || fail "dpkg-deb -x failed"
_pass
PBIN=$ROOT/usr/bin/gpupool
assert_eq "$("$PBIN" --version)" "gpupool $VERSION" "the packaged binary runs"
cmp -s "$ROOT/usr/share/bash-completion/completions/gpupool" <("$PBIN" completion bash) ||
    fail "the packaged completion is not the binary's"
_pass
assert_eq "$(bash -c ". '$ROOT/usr/share/bash-completion/completions/gpupool' && complete -p gpupool" 2>&1)" \
    "complete -F _gpupool gpupool" "bash completion loads"

note "licence, changelog and manual page (issue 42, item 6)"
DOC=$ROOT/usr/share/doc/gpupool
assert_file_contains "$DOC/copyright" "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
assert_file_contains "$DOC/copyright" "License: Apache-2.0"
assert_file_contains "$DOC/copyright" "/usr/share/common-licenses/Apache-2.0"
cmp -s "$(dirname "$0")/../../LICENSE" /usr/share/common-licenses/Apache-2.0 ||
    fail "LICENSE is not the Apache License 2.0 the copyright file names"
_pass
assert_match "$(zcat "$DOC/changelog.gz" | head -n 1)" "^gpupool \\($VERSION\\) unstable; urgency=" \
    "the changelog's newest entry is this version"
if command -v dpkg-parsechangelog >/dev/null; then
    zcat "$DOC/changelog.gz" >"$E2E_TMP/changelog"
    assert_eq "$(dpkg-parsechangelog -l "$E2E_TMP/changelog" -S Version)" "$VERSION" "dpkg reads the changelog"
fi
MAN=$ROOT/usr/share/man/man1/gpupool.1.gz
zcat "$MAN" | groff -man -Tutf8 -ww >"$E2E_TMP/man.txt" 2>"$E2E_TMP/man.err" || fail "groff failed"
assert_eq "$(wc -c <"$E2E_TMP/man.err")" 0 "the manual page renders without a warning ($(head -c 300 "$E2E_TMP/man.err"))"
# every command of the binary's table has its section, with its own help (read from a file:
# grep -q stopping early would cut zcat's pipe)
zcat "$MAN" >"$E2E_TMP/man.1"
for c in $("$PBIN" --help | sed -n '/^commands:/,/^$/p' | awk 'NR > 1 && NF {print $1}'); do
    grep -qx ".SS $c" "$E2E_TMP/man.1" || fail "the manual page has no section for '$c'"
done
_pass
assert_file_contains "$E2E_TMP/man.1" "set [--tenant T] [--project P]"
assert_match "$(dpkg-deb -f "$DEB" Recommends)" "poppler-utils" "PDF text extraction is declared"

# ---------------------------------------------------------------- the units
UNITS=$ROOT/usr/lib/systemd/system
SERVER_UNIT=$UNITS/gpupool-server.service
AGENT_UNIT=$UNITS/gpupool-agent.service
# unit_key UNIT KEY: the values of KEY= lines in UNIT, one a line
unit_key() { sed -n "s/^$2=//p" "$1"; }
note "gpupool-server.service: hardening, user, state"
for kv in User=gpupool Group=gpupool ProtectSystem=strict ProtectHome=yes PrivateTmp=yes \
    PrivateDevices=yes NoNewPrivileges=yes CapabilityBoundingSet= \
    "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6" SystemCallFilter=@system-service \
    StateDirectory=gpupool ReadWritePaths=/var/lib/gpupool Restart=on-failure \
    StandardError=journal; do
    grep -qxF -- "$kv" "$SERVER_UNIT" || fail "gpupool-server.service lacks the line '$kv'"
    _pass
done
assert_eq "$(unit_key "$SERVER_UNIT" ExecStart)" \
    "/usr/bin/gpupool server --config /etc/gpupool/server.conf" "the server's ExecStart"
assert_eq "$(grep -c '^User=' "$AGENT_UNIT")" 0 "the agent runs as root"
assert_eq "$(unit_key "$AGENT_UNIT" EnvironmentFile)" /etc/gpupool/agent.conf "the agent's EnvironmentFile"
# shellcheck disable=SC2016  # the unit's own ${...}, expanded by systemd
assert_contains "$(unit_key "$AGENT_UNIT" ExecStart)" '--join-token-file ${GPUPOOL_JOIN_TOKEN_FILE}' \
    "the agent's ExecStart"
assert_eq "$(unit_key "$AGENT_UNIT" Restart)" on-failure "the agent's Restart"

if command -v systemd-analyze >/dev/null; then
    note "systemd-analyze verify (in the extracted tree, with this machine's system units)"
    # verify resolves the units' dependencies (sysinit.target, ...) and ExecStart inside
    # --root: give it copies of the system's units next to the package's
    [ -d /usr/lib/systemd/system ] && cp -rn /usr/lib/systemd/system/. "$UNITS/"
    [ -d /lib/systemd/system ] && cp -rn /lib/systemd/system/. "$UNITS/" 2>/dev/null
    (cd "$ROOT" && systemd-analyze verify --root="$ROOT" gpupool-server.service \
        gpupool-agent.service) >"$E2E_TMP/verify" 2>&1
    RC=$?
    E2E_LAST_CMD="systemd-analyze verify"
    OUT_FILE=$E2E_TMP/verify ERR_FILE=/dev/null assert_rc 0
    # verify only warns (exit 0) about unknown keys or values it cannot parse
    [ ! -s "$E2E_TMP/verify" ] || {
        _show "systemd-analyze verify" "$E2E_TMP/verify"
        fail "systemd-analyze verify printed warnings"
    }
    _pass
    # and a broken unit does fail here (the check can fail)
    sed 's/^ProtectHome=yes$/ProtectHome=bogus/' "$SERVER_UNIT" >"$UNITS/gpupool-broken.service"
    (cd "$ROOT" && systemd-analyze verify --root="$ROOT" gpupool-broken.service) >"$E2E_TMP/verify" 2>&1
    assert_file_contains "$E2E_TMP/verify" "gpupool-broken.service:" "verify reports a bad value"
    assert_file_contains "$E2E_TMP/verify" "bogus" "verify names the bad value"
    rm -f "$UNITS/gpupool-broken.service"
    if systemd-analyze security --help 2>/dev/null | grep -q -- --offline; then
        # the server's exposure, as systemd scores it (0 safest .. 10), stays "OK": at most
        # 2.0 (--threshold is on a 0..100 scale); 1.5 when this was written
        (cd "$ROOT" && systemd-analyze security --offline=yes --root="$ROOT" --threshold=20 \
            gpupool-server.service) >"$E2E_TMP/security" 2>&1
        RC=$?
        E2E_LAST_CMD="systemd-analyze security --offline=yes --threshold=20 gpupool-server.service"
        OUT_FILE=$E2E_TMP/security ERR_FILE=/dev/null assert_rc 0
        note "$(grep -o 'Overall exposure level.*: [0-9.]* [A-Z]*' "$E2E_TMP/security")"
    fi
else
    note "SKIPPED systemd-analyze verify: systemd-analyze is not installed (apt-get install systemd)"
fi

# ---------------------------------------------------------------- run it as the unit does
# Paths of the unit and its files, moved into the temporary folder: / -> $ROOT for
# what the package holds, /var/lib -> $VARLIB for the StateDirectory.
VARLIB=$E2E_TMP/varlib
mkdir -p "$VARLIB"
relocate() {
    sed -e "s#/usr/bin/gpupool#$ROOT/usr/bin/gpupool#g" -e "s#/etc/gpupool/#$ROOT/etc/gpupool/#g" \
        -e "s#/var/lib/#$VARLIB/#g"
}
# expand_exec LINE: the words of an ExecStart line as systemd splits them (no quoting in
# ours): ${VAR} is one word, a lone $VAR splits on white space
expand_exec() {
    local w name
    EXEC=()
    for w in $1; do
        if [[ "$w" =~ ^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$ ]]; then
            name=${BASH_REMATCH[1]}
            EXEC+=("${!name-}")
        elif [[ "$w" =~ ^\$([A-Za-z_][A-Za-z0-9_]*)$ ]]; then
            name=${BASH_REMATCH[1]}
            # shellcheck disable=SC2206
            EXEC+=(${!name-})
        else
            EXEC+=("$w")
        fi
    done
}

note "the server, as gpupool-server.service starts it"
# server.conf as shipped, but for its paths and a free port
relocate <"$ROOT/etc/gpupool/server.conf" | sed 's/^listen = .*/listen = 127.0.0.1:0/' \
    >"$E2E_TMP/server.conf.new"
mv "$E2E_TMP/server.conf.new" "$ROOT/etc/gpupool/server.conf"
if [ -n "${GP_TEST_PG:-}" ]; then
    echo "store = $(store_url "$VARLIB/gpupool")" >>"$ROOT/etc/gpupool/server.conf"
fi
assert_file_contains "$ROOT/etc/gpupool/server.conf" "data = $VARLIB/gpupool"
STATE=$VARLIB/$(unit_key "$SERVER_UNIT" StateDirectory)
RUN_AS=()
if [ "$(id -u)" == 0 ]; then
    # the unit's User= does not exist here: an unprivileged uid stands for it, with the
    # unit's NoNewPrivileges= and no capabilities
    RUN_AS=(setpriv --reuid=65534 --regid=65534 --clear-groups --no-new-privs --inh-caps=-all
        --bounding-set=-all)
fi
# StateDirectory=: made by systemd, 0700, owned by User=
install -d -m "$(unit_key "$SERVER_UNIT" StateDirectoryMode)" "$STATE"
[ "$(id -u)" == 0 ] && chown 65534:65534 "$STATE"
expand_exec "$(unit_key "$SERVER_UNIT" ExecStart | relocate)"
assert_eq "${EXEC[0]}" "$PBIN" "ExecStart runs the packaged binary"
SERVER_LOG=$E2E_TMP/unit-server.err
SERVER_OUT=$E2E_TMP/unit-server.out
(umask "$(unit_key "$SERVER_UNIT" UMask)" && cd / && exec "${RUN_AS[@]}" "${EXEC[@]}") \
    >"$SERVER_OUT" 2>"$SERVER_LOG" </dev/null &
SERVER_PID=$!
E2E_PIDS+=("$SERVER_PID")
server_up() {
    kill -0 "$SERVER_PID" 2>/dev/null || return 0 # exited: checked below
    [ -s "$STATE/server.url" ] || return 1
    URL=$(head -n 1 "$STATE/server.url")
    [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$URL/healthz")" == 200 ]
}
poll 30 server_up || {
    _show "server stderr" "$SERVER_LOG"
    fail "the server started as the unit does was not healthy within 30 s"
}
kill -0 "$SERVER_PID" 2>/dev/null || {
    _show "server stdout" "$SERVER_OUT"
    _show "server stderr" "$SERVER_LOG"
    fail "the server started as the unit does exited"
}
_pass
api_raw GET /healthz
assert_status 200
api_raw GET /readyz
assert_status 200
assert_file_contains "$SERVER_OUT" "$STATE/admin.token"
[ -s "$STATE/admin.token" ] || fail "no admin token in the state folder"
assert_eq "$(stat -c %a "$STATE/admin.token")" 600 "admin.token mode"
if [ "$(id -u)" == 0 ]; then
    assert_eq "$(stat -c %u "$STATE/admin.token")" 65534 "admin.token belongs to the service's uid"
    [ -n "${GP_TEST_PG:-}" ] || assert_eq "$(stat -c '%u %a' "$STATE/gpupool.db")" "65534 600" \
        "the database: the service's, mode 0600 (UMask=0077)"
fi
TOKEN=$(head -n 1 "$STATE/admin.token")
run_cli --server "$URL" --token "$TOKEN" -o json whoami
assert_rc 0
assert_eq "$(jout .name)" admin "whoami against the packaged server"

note "the agent, as gpupool-agent.service starts it (agent.conf), joins the server"
run_cli --server "$URL" --token "$TOKEN" member grant admin ops-engineer
assert_rc 0
NODES=$(jq '.nodes|length' "$SRC/examples/inventory.json")
run_cli --server "$URL" --token "$TOKEN" -o json jointoken create --uses "$NODES"
assert_rc 0
JT=$(jout .token)
assert_ne "$JT" "" "join token"
# agent.conf as shipped, with this server, the join token file and declared GPUs
relocate <"$ROOT/etc/gpupool/agent.conf" |
    sed -e "s#^GPUPOOL_SERVER=.*#GPUPOOL_SERVER=$URL#" \
        -e "s#^GPUPOOL_AGENT_OPTS=.*#GPUPOOL_AGENT_OPTS=--inventory $SRC/examples/inventory.json --once#" \
        >"$E2E_TMP/agent.conf.new"
mv "$E2E_TMP/agent.conf.new" "$ROOT/etc/gpupool/agent.conf"
JTF=$(sed -n 's/^GPUPOOL_JOIN_TOKEN_FILE=//p' "$ROOT/etc/gpupool/agent.conf")
assert_eq "$JTF" "$ROOT/etc/gpupool/join-token" "the join token file of agent.conf"
(umask 077 && printf '%s\n' "$JT" >"$JTF")
AGENT_STATE=$VARLIB/$(unit_key "$AGENT_UNIT" StateDirectory)
install -d -m "$(unit_key "$AGENT_UNIT" StateDirectoryMode)" "$AGENT_STATE"
E2E_LAST_CMD="agent (gpupool-agent.service's ExecStart)"
(
    # EnvironmentFile=: NAME=value lines (no shell), '#' comments
    while IFS= read -r line; do
        [[ "$line" =~ ^[[:space:]]*(#|$) ]] && continue
        [[ "$line" =~ ^([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]] || fail "agent.conf: not NAME=value: $line"
        export "${BASH_REMATCH[1]}=${BASH_REMATCH[2]}"
    done <"$(unit_key "$AGENT_UNIT" EnvironmentFile | relocate)"
    expand_exec "$(unit_key "$AGENT_UNIT" ExecStart | relocate)"
    umask "$(unit_key "$AGENT_UNIT" UMask)"
    cd / && exec timeout 60 "${EXEC[@]}"
) >"$OUT_FILE" 2>"$ERR_FILE" </dev/null
RC=$?
assert_rc 0
[ -n "$(ls -A "$AGENT_STATE")" ] || fail "the agent kept nothing in its state folder"
_pass
run_cli --server "$URL" --token "$TOKEN" -o json node list
assert_rc 0
assert_eq "$(jout '.items|length')" "$NODES" "the agent's nodes joined"

stop_server
done_testing
