#!/usr/bin/env bash
# shellcheck disable=SC2119  # start_server takes optional flags
#
# test_tls.sh - HTTPS for the API, the gateway and the agent: a throw-away CA
# and server certificate (openssl, in the test folder); `gpupool server
# --tls-cert/--tls-key` writes an https:// server.url; the CLI verifies the
# server with --ca (or GPUPOOL_CA) and fails with one line without it (or
# with the wrong CA); an agent joins over TLS with --ca; the official openai
# client works against https://…/v1 with NODE_EXTRA_CA_CERTS; `gpupool
# gateway` serves HTTPS too; bad certificate and key files are refused with
# one line.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_tls.sh
. "$(dirname "$0")/lib.sh"

command -v openssl >/dev/null || fail "this test needs openssl (scripts/bootstrap.sh)"
GW=$(cd "$(dirname "$0")/../gateway" && pwd)
command -v node >/dev/null || fail "node is not installed (scripts/npm-deps.sh)"
[ -d "$GW/node_modules/openai" ] || fail "tests/gateway/node_modules is missing (scripts/npm-deps.sh)"

# ---------------------------------------------------------------- certificates
note "a throw-away CA and server certificate"
PKI=$E2E_TMP/pki
mkdir -p "$PKI"
# mkca NAME: a self-signed CA -> NAME.pem, NAME.key
mkca() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj "/CN=gpupool e2e $1" -keyout "$PKI/$1.key" -out "$PKI/$1.pem" 2>"$PKI/openssl.err" ||
        { _show openssl "$PKI/openssl.err"; fail "openssl could not make CA $1"; }
}
mkca ca
mkca other-ca
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
    -keyout "$PKI/server.key" -out "$PKI/server.csr" 2>"$PKI/openssl.err" ||
    fail "openssl could not make the server key"
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' \
    >"$PKI/ext.cnf"
openssl x509 -req -in "$PKI/server.csr" -CA "$PKI/ca.pem" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 2 -extfile "$PKI/ext.cnf" -out "$PKI/server.pem" 2>"$PKI/openssl.err" ||
    fail "openssl could not sign the server certificate"
assert_match "$(openssl verify -CAfile "$PKI/ca.pem" "$PKI/server.pem")" ': OK$' "the chain verifies"
CA=$PKI/ca.pem

# launch_tls ROLE DIR URLFILE ARGS...: start `gpupool ROLE ARGS` and wait for
# an https URL in DIR/URLFILE answering /healthz through the CA -> URL
launch_tls() {
    local role=$1 dir=$2 urlfile=$3 i url=""
    shift 3
    E2E_NSERVERS=$((E2E_NSERVERS + 1))
    SERVER_LOG=$E2E_TMP/server.$E2E_NSERVERS.err
    SERVER_OUT=$E2E_TMP/server.$E2E_NSERVERS.out
    rm -f "$dir/$urlfile"
    "$GPUPOOL_BIN" "$role" "$@" >"$SERVER_OUT" 2>"$SERVER_LOG" </dev/null &
    SERVER_PID=$!
    E2E_PIDS+=("$SERVER_PID")
    for ((i = 0; i < 150; i++)); do
        kill -0 "$SERVER_PID" 2>/dev/null || { _show stderr "$SERVER_LOG"; fail "$role exited during start"; }
        [ -s "$dir/$urlfile" ] && url=$(head -n 1 "$dir/$urlfile")
        if [ -n "$url" ] && [ "$(curl -s --cacert "$CA" -o /dev/null -w '%{http_code}' --max-time 2 \
            "$url/healthz")" == 200 ]; then
            break
        fi
        sleep 0.1
    done
    [ "$i" -lt 150 ] || { _show stderr "$SERVER_LOG"; fail "$role over TLS did not become healthy"; }
    URL=$url
}

# ---------------------------------------------------------------- refusals
note "bad certificate and key files are refused with one line"
# run_server_fg ARGS...: `gpupool server ARGS` expected to exit by itself
run_server_fg() {
    E2E_LAST_CMD="server $*"
    timeout 15 "$GPUPOOL_BIN" server --data "$E2E_TMP/bad" --listen 127.0.0.1:0 "$@" \
        >"$OUT_FILE" 2>"$ERR_FILE" </dev/null
    RC=$?
    [ "$RC" != 124 ] || fail "gpupool server $* was still running after 15 s"
    grep -v ' level=' "$ERR_FILE" >"$E2E_TMP/err.lines"
    assert_eq "$(wc -l <"$E2E_TMP/err.lines")" 1 "one error line from gpupool server $*"
    cp "$E2E_TMP/err.lines" "$ERR_FILE"
}
run_server_fg --tls-cert "$PKI/server.pem"
assert_rc 2
assert_one_line_error "--tls-cert and --tls-key go together"
run_server_fg --tls-cert "$PKI/missing.pem" --tls-key "$PKI/server.key"
assert_rc 1
assert_one_line_error "cannot read --tls-cert"
run_server_fg --tls-cert "$PKI/server.key" --tls-key "$PKI/server.key"
assert_rc 1
assert_one_line_error "holds no PEM CERTIFICATE"
run_server_fg --tls-cert "$PKI/server.pem" --tls-key "$PKI/server.pem"
assert_rc 1
assert_one_line_error "holds no PEM PRIVATE KEY"
run_server_fg --tls-cert "$PKI/server.pem" --tls-key "$PKI/ca.key"
assert_rc 1
assert_one_line_error "cannot start HTTPS"
openssl pkcs8 -topk8 -in "$PKI/server.key" -passout pass:secret -out "$PKI/enc.key" 2>/dev/null
run_server_fg --tls-cert "$PKI/server.pem" --tls-key "$PKI/enc.key"
assert_rc 1
assert_one_line_error "encrypted key"
run_server_fg --tls-cert "$PKI/server.pem" --tls-key "$PKI/server.key" --upstream-ca "$PKI/nope.pem"
assert_rc 1
assert_one_line_error "cannot read --upstream-ca"

# ---------------------------------------------------------------- the server
note "the server over HTTPS"
launch_tls server "$DATA" server.url --data "$DATA" $(store_flag "$DATA") --listen 127.0.0.1:0 \
    --tls-cert "$PKI/server.pem" --tls-key "$PKI/server.key" --upstream-ca "$CA" \
    --endpoint-allow 127.0.0.0/8
TOKEN=$(head -n 1 "$DATA/admin.token")
assert_match "$URL" '^https://127\.0\.0\.1:[0-9]+$' "server.url is https"
assert_file_contains "$SERVER_OUT" "listening on $URL"
PORT=${URL##*:}
# plain HTTP on the TLS port gets no API answer
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 "http://127.0.0.1:$PORT/healthz" || true)
assert_ne "$code" 200 "plain http on the https port"
# curl without the CA refuses the server
curl -s -o /dev/null --max-time 3 "$URL/healthz"
assert_eq "$?" 60 "curl without the CA: certificate problem (exit 60)"

run_cli --server "$URL" --token "$TOKEN" --ca "$CA" whoami
assert_rc 0
assert_eq "$(head -n 1 "$OUT_FILE")" "admin (user)" "whoami over TLS with --ca"
GPUPOOL_CA=$CA run_cli --server "$URL" --token "$TOKEN" whoami
assert_rc 0
run_cli --server "$URL" --token "$TOKEN" whoami
assert_rc 1
assert_one_line_error "TLS with $URL failed"
assert_file_contains "$ERR_FILE" "--ca FILE"
run_cli --server "$URL" --token "$TOKEN" --ca "$PKI/other-ca.pem" whoami
assert_rc 1
assert_one_line_error "TLS with $URL failed"
run_cli --server "$URL" --token "$TOKEN" --ca "$PKI/missing.pem" whoami
assert_rc 2
assert_one_line_error "cannot read CA file"
# a name the certificate does not carry fails verification too
run_cli --server "https://127.0.0.2:$PORT" --token "$TOKEN" --ca "$CA" whoami
assert_rc 1
assert_one_line_error
# login (a password over the wire) works through TLS
printf 'Tls-Secret-Pass-7\n' >"$E2E_TMP/pw.tu"
run_in "$E2E_TMP/pw.tu" --server "$URL" --token "$TOKEN" --ca "$CA" user create tu
assert_rc 0
run_in "$E2E_TMP/pw.tu" --server "$URL" --ca "$CA" login tu
assert_rc 0
assert_match "$(head -n 1 "$OUT_FILE")" '^gpt_' "login over TLS"
tg() { run_cli --server "$URL" --token "$TOKEN" --ca "$CA" "$@"; }

# ---------------------------------------------------------------- the agent
note "an agent joins over TLS with --ca"
tg member grant admin ops-engineer
assert_rc 0
tg -o json jointoken create --ttl 600
assert_rc 0
JT=$(jout .token)
E2E_LAST_CMD="agent --once (no --ca)"
GPUPOOL_JOIN_TOKEN=$JT timeout 30 "$GPUPOOL_BIN" --server "$URL" agent --once --simulate 1 \
    --state-dir "$E2E_TMP/agent" >"$OUT_FILE" 2>"$ERR_FILE" </dev/null
RC=$?
assert_ne "$RC" 0 "an agent without --ca does not join"
assert_file_contains "$ERR_FILE" "TLS with $URL failed"
E2E_LAST_CMD="agent --once --ca"
GPUPOOL_JOIN_TOKEN=$JT timeout 30 "$GPUPOOL_BIN" --server "$URL" agent --once --simulate 1 --ca "$CA" \
    --state-dir "$E2E_TMP/agent" >"$OUT_FILE" 2>"$ERR_FILE" </dev/null
RC=$?
assert_rc 0
tg -o json node list
assert_rc 0
assert_json '.items | length' 1 "$OUT_FILE"
assert_json '.items[0].state' ready "$OUT_FILE"
run_cli --server "$URL" agent --once --ca "$PKI/missing.pem" --state-dir "$E2E_TMP/agent"
assert_rc 2
assert_one_line_error "cannot read --ca"

# ---------------------------------------------------------------- the gateway
note "the official openai client over https"
node "$GW/upstream.mjs" --port 0 --name tls >"$E2E_TMP/up.out" 2>&1 &
E2E_PIDS+=("$!")
for ((i = 0; i < 100; i++)); do
    UP=$(awk '/^listening/{print $2}' "$E2E_TMP/up.out")
    [ -n "$UP" ] && break
    sleep 0.05
done
[ -n "$UP" ] || fail "upstream did not start"
tg tenant create red
assert_rc 0
tg member grant admin tenant-admin --tenant red
assert_rc 0
tg project create train --tenant red
assert_rc 0
tg model create llama --tenant red
assert_rc 0
tg endpoint add --tenant red --model llama --url "http://127.0.0.1:$UP/v1" --accelerator H100-80GB
assert_rc 0
tg -o json key create k1 --tenant red --project train
assert_rc 0
KEY=$(jout .key)
# call BASE ARGS...: client.mjs -> OUT_FILE
call() {
    local base=$1
    shift
    E2E_LAST_CMD="client.mjs $*"
    timeout 60 node "$GW/client.mjs" "$base" "$KEY" "$@" >"$OUT_FILE" 2>"$ERR_FILE"
    RC=$?
    [ "$RC" == 0 ] || { _show stderr "$ERR_FILE"; fail "client.mjs $1 exited $RC"; }
}
NODE_EXTRA_CA_CERTS=$CA call "$URL/v1" models
assert_json .ok true "$OUT_FILE"
assert_json '.ids | join(",")' llama "$OUT_FILE"
NODE_EXTRA_CA_CERTS=$CA call "$URL/v1" chat '{"model":"llama","content":"over tls"}'
assert_json .ok true "$OUT_FILE"
assert_json .content "echo:over tls" "$OUT_FILE"
NODE_EXTRA_CA_CERTS=$CA call "$URL/v1" chat-stream '{"model":"llama","content":"streamed over tls","include_usage":true}'
assert_json .ok true "$OUT_FILE"
assert_json .content "echo:streamed over tls" "$OUT_FILE"
call "$URL/v1" models
assert_json .ok false "$OUT_FILE"
assert_json .status null "$OUT_FILE"

note "gpupool gateway over HTTPS"
SERVER_PID_MAIN=$SERVER_PID
URL_MAIN=$URL
launch_tls gateway "$DATA" gateway.url --data "$DATA" $(store_flag "$DATA") --listen 127.0.0.1:0 \
    --tls-cert "$PKI/server.pem" --tls-key "$PKI/server.key" --endpoint-allow 127.0.0.0/8
assert_match "$URL" '^https://127\.0\.0\.1:[0-9]+$' "gateway.url is https"
NODE_EXTRA_CA_CERTS=$CA call "$URL/v1" chat '{"model":"llama","content":"via the gateway"}'
assert_json .ok true "$OUT_FILE"
assert_json .content "echo:via the gateway" "$OUT_FILE"
stop_server
SERVER_PID=$SERVER_PID_MAIN
URL=$URL_MAIN
stop_server

done_testing
