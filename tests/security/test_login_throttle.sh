#!/usr/bin/env bash
# shellcheck disable=SC2016  # jq filters in single quotes
#
# test_login_throttle.sh - issue 33 item 6: failed logins slow the source
# that fails, never the account for everyone (docs/governance.md "Login
# throttling", src/auth/throttle.c).  A real server; two loopback source
# addresses (127.0.0.2 the guesser, 127.0.0.1 the real user).
#
# - five wrong passwords for victim from 127.0.0.2: the sixth attempt from
#   there waits (429, Retry-After), even with the right password;
# - victim logs in from 127.0.0.1 at once, and its token keeps working;
# - another name from 127.0.0.2 is not held back by victim's count;
# - 20 failures over many names from 127.0.0.3 hold that source back;
# - gpupool_login_throttled_total counts both kinds; the refusals are audited.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/security/test_login_throttle.sh
. "$(dirname "$0")/../e2e/lib.sh"

# login_from ADDR NAME PASSWORD -> STATUS, BODY_FILE
login_from() {
    AUTH_HEADER='' api_raw POST /api/v1/login --interface "$1" -H 'Content-Type: application/json' \
        --data-binary "{\"name\":\"$2\",\"password\":\"$3\"}"
}
metric() { # metric LABEL -> the counter's value
    curl -sS --max-time 10 -H "Authorization: Bearer $TOKEN" "$URL/metrics" |
        sed -n "s/^gpupool_login_throttled_total{by=\"$1\"} //p"
}

start_server
# loopback reaches 127.0.0.0/8 on Linux; a machine without it cannot run this test
curl -sS --max-time 5 --interface 127.0.0.2 -o /dev/null "$URL/healthz" 2>/dev/null ||
    curl -sS --max-time 5 --interface 127.0.0.2 -o /dev/null "$URL/api/v1/whoami" 2>/dev/null || {
    echo "skip: cannot bind 127.0.0.2" >&2
    exit 77
}
for u in victim other; do
    api POST /api/v1/users "{\"name\":\"$u\",\"password\":\"$u-Secret-123\"}"
    assert_status 201
done
login_from 127.0.0.1 victim victim-Secret-123
assert_status 200
VTOK=$(jq -r .token "$BODY_FILE")

note "a guesser from 127.0.0.2 slows only itself"
for i in 1 2 3 4 5; do
    login_from 127.0.0.2 victim "wrong-password-$i"
    assert_status 401
done
login_from 127.0.0.2 victim victim-Secret-123
assert_status 429
assert_json .error.code too_many_attempts
assert_header Retry-After '^[1-9][0-9]?$'
# the real user, elsewhere, is not locked out; its token works
login_from 127.0.0.1 victim victim-Secret-123
assert_status 200
AUTH_HEADER="Authorization: Bearer $VTOK" api GET /api/v1/whoami
assert_status 200
# another name from the guesser's address is not held back by victim's count
login_from 127.0.0.2 other other-Secret-123
assert_status 200
[ "$(metric name_and_source)" -ge 1 ] || fail "name_and_source not counted: $(metric name_and_source)"
_pass

note "a source that fails over many names is held back"
for i in $(seq 1 20); do
    login_from 127.0.0.3 "ghost-$i" wrong-password
    assert_status 401
done
login_from 127.0.0.3 other other-Secret-123
assert_status 429
login_from 127.0.0.1 other other-Secret-123
assert_status 200
[ "$(metric source)" -ge 1 ] || fail "source not counted: $(metric source)"
_pass
api GET '/api/v1/audit?action=user.login&result=denied&limit=500'
assert_status 200
assert_eq "$(jq '[.items[] | select(.status == 429)] | length' "$BODY_FILE")" 2 \
    "the two throttled logins audited as denied"

done_testing
