#!/usr/bin/env bash
# shellcheck disable=SC2046,SC2119,SC2317  # store_flag splits on purpose; helpers run via poll
#
# test_audit_signed.sh - issue 18, "audit that survives a database
# administrator": the audit chain is checked against checkpoints signed with
# an Ed25519 key kept outside the store, so someone who can write the store
# but not the key is caught even when they recompute every hash.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/security/test_audit_signed.sh
#
# Checked:
# - a server signs checkpoints of the chain head every interval
#   (--audit-checkpoint-interval 1s) and at a clean shutdown, into the
#   audit_checkpoints table and, one JSON line each, DATA/audit-checkpoints.jsonl;
#   its key DATA/audit-signing.key is created 0600, the public key is written to
#   DATA/audit-signing.pub and shown as key_id by GET /api/v1/audit/checkpoints
#   (security-admin; a user without roles gets 403, no token 401) and
#   `gpupool audit checkpoints`; verify reports the checkpoints it checked;
# - (a) a DBA rewrites one old event and recomputes every later hash and the
#   head (python3, as src/audit/audit.c hashes): the unkeyed chain is
#   consistent again, yet `gpupool audit verify` offline (--public-key,
#   --checkpoints), GET /api/v1/audit/verify and `gpupool check` report the
#   rewrite, and a server started on that store refuses to sign it;
# - (b) the newest events, their checkpoint rows and the head are rolled back
#   consistently: verify with the checkpoint file reports the deletion;
# - (c) a checkpoint row re-signed with another key is refused;
# - (d) on PostgreSQL, two servers given the same key: only the leader signs,
#   and the other verifies against its checkpoints.
# On PostgreSQL the same tampering goes through psql (lib.sh's db_sql).
. "$(dirname "$0")/../e2e/lib.sh"

command -v python3 >/dev/null 2>&1 || fail "this test needs python3 (to recompute the chain hashes)"
[ -n "${GP_TEST_PG:-}" ] || command -v sqlite3 >/dev/null 2>&1 ||
    fail "this test needs the sqlite3 command-line tool"

COLS="seq, id, ts_us, request_id, actor, on_behalf, source, action, target_type, target_id, tenant, project, result, status, summary, prev_hash, hash"

# sql SQL: run SQL on DATA's store (SQLite or PostgreSQL)
sql() {
    db_sql "$DATA" "$1" >"$E2E_TMP/sql.out" 2>&1 || {
        _show "sql" "$E2E_TMP/sql.out"
        fail "could not run: $1"
    }
    cat "$E2E_TMP/sql.out"
}

# dump_audit: every event as one JSON object a line, in seq order
dump_audit() {
    if [ -n "${GP_TEST_PG:-}" ]; then
        sql "SELECT row_to_json(a) FROM (SELECT $COLS FROM audit ORDER BY seq) a"
    else
        local obj="" c
        for c in ${COLS//,/}; do obj+="${obj:+,}'$c',$c"; done
        sql "SELECT json_object($obj) FROM audit ORDER BY seq"
    fi
}

# The chain hash, as src/audit/audit.c computes it: BLAKE2b-256 over
# "gpupool-audit-v1", the previous hash and every field, each as
# <8-byte little-endian length><bytes>, numbers in decimal.
cat >"$E2E_TMP/chain.py" <<'EOF'
import hashlib, json, struct, sys

FIELDS = ("seq id ts_us request_id actor on_behalf source action target_type target_id "
          "tenant project result status summary").split()

def rec_hash(r, prev):
    h = hashlib.blake2b(digest_size=32)
    def f(v):
        b = str(v).encode()
        h.update(struct.pack("<Q", len(b)))
        h.update(b)
    f("gpupool-audit-v1"); f(prev)
    for c in FIELDS:
        f(r[c])
    return h.hexdigest()

def q(s):
    return "'" + str(s).replace("'", "''") + "'"

rows = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
if sys.argv[1] == "check":      # how many rows the unkeyed chain accepts
    prev, good = "", 0
    for r in rows:
        if r["prev_hash"] == prev and rec_hash(r, prev) == r["hash"]:
            good += 1
        prev = r["hash"]
    print(good)
else:                           # rewrite: SQL that edits row K and rehashes the rest
    k = int(sys.argv[3])
    out, prev = ["BEGIN;"], ""
    for r in rows:
        if r["seq"] == k:
            r["actor"] = "mallory"
            out.append("UPDATE audit SET actor = 'mallory' WHERE seq = %d;" % k)
        if r["seq"] >= k:
            r["prev_hash"] = prev
            r["hash"] = rec_hash(r, prev)
            out.append("UPDATE audit SET prev_hash = %s, hash = %s WHERE seq = %d;"
                       % (q(r["prev_hash"]), q(r["hash"]), r["seq"]))
        prev = r["hash"]
    out.append("UPDATE audit_head SET seq = %d, hash = %s WHERE id = 1;" % (rows[-1]["seq"], q(prev)))
    out.append("COMMIT;")
    print("\n".join(out))
EOF

# ---------------------------------------------------------------- a signing server
# the key lives outside the store (on PostgreSQL a server signs only when given one)
SIGNING=(--audit-key "$DATA/audit-signing.key" --audit-checkpoint-interval 1s)
start_server "${SIGNING[@]}"
KEY_ID=$(head -n 1 "$DATA/audit-signing.pub")
assert_match "$KEY_ID" '^[0-9a-f]{64}$' "public key file"
assert_eq "$(stat -c %a "$DATA/audit-signing.key")" 600 "mode of the signing key"
for t in alpha beta gamma; do
    api POST /api/v1/tenants "{\"name\":\"$t\"}"
    assert_status 201
    api POST "/api/v1/tenants/$t/projects" '{"name":"p1","class":"research"}'
    assert_status 201
done
AUTH_HEADER='' api GET /api/v1/tenants
assert_status 401

# a periodic checkpoint covers the head within the interval
head_signed() {
    api GET /api/v1/audit/checkpoints
    local head
    head=$(sql "SELECT seq FROM audit_head")
    [ "$(jq -r '.items[-1].seq // 0' "$BODY_FILE")" = "$head" ]
}
poll 10 head_signed || fail "no checkpoint of the chain head within 10 s"
api GET /api/v1/audit/checkpoints
assert_status 200
assert_json .key_id "$KEY_ID"
assert_json '.items | length > 0' true
assert_json '.items[-1].key_id' "$KEY_ID"
assert_json '.items[-1].signature | test("^[0-9a-f]{128}$")' true
assert_json '.items[-1].count == .items[-1].seq' true
assert_json '.next' null
SIGNED=$(jq -r '.items[-1].seq' "$BODY_FILE")
assert_eq "$(jq -r '.items[-1].head' "$BODY_FILE")" \
    "$(sql "SELECT hash FROM audit WHERE seq = $SIGNED")" "signed head is that event's hash"
assert_eq "$(tail -n 1 "$DATA/audit-checkpoints.jsonl" | jq -r .signature)" \
    "$(jq -r '.items[-1].signature' "$BODY_FILE")" "the file holds the same checkpoint"
gp audit checkpoints
assert_rc 0
assert_file_contains "$OUT_FILE" "signing key: $KEY_ID"
gp audit verify
assert_rc 0
assert_file_contains "$OUT_FILE" "audit chain OK"
assert_file_contains "$OUT_FILE" "signed checkpoints:"
api GET /api/v1/audit/verify
assert_json .ok true
assert_json .checkpoints.key_id "$KEY_ID"
assert_json '.checkpoints.checked > 0' true
assert_json '.checkpoints.file > 0' true

# who may read them: security-admin (admin here); a user with no role may not
api POST /api/v1/users '{"name":"nobody","password":"nobody-pass-1234"}'
assert_status 201
api POST /api/v1/login '{"name":"nobody","password":"nobody-pass-1234"}'
assert_status 200
NOBODY=$(jq -r .token "$BODY_FILE")
TOKEN=$NOBODY api GET /api/v1/audit/checkpoints
assert_status 403
AUTH_HEADER='' api GET /api/v1/audit/checkpoints
assert_status 401
api GET '/api/v1/audit/checkpoints?limit=0'
assert_status 400

api POST /api/v1/tenants '{"name":"delta"}'
assert_status 201
stop_server
# a last checkpoint at the clean shutdown covers everything
N=$(sql "SELECT seq FROM audit_head")
assert_eq "$(tail -n 1 "$DATA/audit-checkpoints.jsonl" | jq -r .seq)" "$N" "shutdown checkpoint"
assert_eq "$(sql "SELECT MAX(seq) FROM audit_checkpoints")" "$N" "shutdown checkpoint row"
NCP=$(sql "SELECT COUNT(*) FROM audit_checkpoints")
[ "$NCP" -ge 2 ] || fail "expected a periodic and a shutdown checkpoint, got $NCP"
[ "$N" -ge 10 ] || fail "expected at least 10 events, got $N"
note "$N events, $NCP checkpoints"

# keep the untouched tables, to restore them between tamperings
sql "CREATE TABLE audit_bak AS SELECT * FROM audit;
     CREATE TABLE audit_head_bak AS SELECT * FROM audit_head;
     CREATE TABLE audit_cp_bak AS SELECT * FROM audit_checkpoints;" >/dev/null
restore() {
    sql "DELETE FROM audit; INSERT INTO audit SELECT * FROM audit_bak;
         DELETE FROM audit_head; INSERT INTO audit_head SELECT * FROM audit_head_bak;
         DELETE FROM audit_checkpoints; INSERT INTO audit_checkpoints SELECT * FROM audit_cp_bak;" \
        >/dev/null
    cp -p "$E2E_TMP/checkpoints.orig" "$DATA/audit-checkpoints.jsonl"
}
cp -p "$DATA/audit-checkpoints.jsonl" "$E2E_TMP/checkpoints.orig"
# the trusted public key, as an auditor keeps it
cp "$DATA/audit-signing.pub" "$E2E_TMP/trusted.pub"

# offline_verify [GLOBAL FLAGS]: `gpupool audit verify` on the store itself, no server
offline_verify() {
    run_cli "$@" audit verify --data "$DATA" $(store_flag "$DATA") \
        --public-key "$E2E_TMP/trusted.pub" --checkpoints "$DATA/audit-checkpoints.jsonl"
}

# untouched: every way of verifying agrees it holds
offline_verify
assert_rc 0
assert_file_contains "$OUT_FILE" "audit chain OK: $N records"
run_cli check --data "$DATA" $(store_flag "$DATA")
assert_rc 0
assert_file_contains "$OUT_FILE" "signed checkpoint(s)"
dump_audit >"$E2E_TMP/audit.jsonl"
assert_eq "$(python3 "$E2E_TMP/chain.py" check "$E2E_TMP/audit.jsonl")" "$N" \
    "rows python3's chain accepts (it hashes as the server does)"

# ---------------------------------------------------------------- (a) rewrite and rehash
note "(a) rewrite event 3 and recompute every later hash and the head"
python3 "$E2E_TMP/chain.py" rewrite "$E2E_TMP/audit.jsonl" 3 >"$E2E_TMP/rewrite.sql" ||
    fail "python3 could not compute the rewrite"
sql "$(cat "$E2E_TMP/rewrite.sql")" >/dev/null
assert_eq "$(sql "SELECT actor FROM audit WHERE seq = 3")" mallory "rewritten actor"
dump_audit >"$E2E_TMP/audit2.jsonl"
# the unkeyed chain is consistent again: the old verify could not tell
assert_eq "$(python3 "$E2E_TMP/chain.py" check "$E2E_TMP/audit2.jsonl")" "$N" \
    "rows the unkeyed chain accepts after the rewrite"
FIRST_CP=$(sql "SELECT MIN(seq) FROM audit_checkpoints WHERE seq >= 3")

offline_verify
assert_rc 1
assert_file_contains "$OUT_FILE" "BROKEN at record $FIRST_CP:"
assert_file_contains "$OUT_FILE" "rewritten"
offline_verify -o json
assert_rc 1
assert_json .ok false "$OUT_FILE"
assert_json .first_bad_seq "$FIRST_CP" "$OUT_FILE"
run_cli check --data "$DATA" $(store_flag "$DATA")
assert_rc 1
assert_file_contains "$OUT_FILE" "audit_chain    FAILED"

# a server on the rewritten store reports it, and signs nothing over it
start_server "${SIGNING[@]}"
api GET /api/v1/audit/verify
assert_status 200
assert_json .ok false
assert_json .first_bad_seq "$FIRST_CP"
assert_json '.reason | test("rewritten")' true
gp audit verify
assert_rc 1
assert_file_contains "$OUT_FILE" "BROKEN"
stop_server
assert_eq "$(sql "SELECT COUNT(*) FROM audit_checkpoints")" "$NCP" "checkpoints after a server ran on the rewritten chain"
assert_file_contains "$SERVER_LOG" "not signing it"

# ---------------------------------------------------------------- (b) delete the newest
note "(b) delete the newest events and their checkpoints, rewind the head"
restore
M=$((N - 3))
sql "DELETE FROM audit WHERE seq > $M;
     DELETE FROM audit_checkpoints WHERE seq > $M;
     UPDATE audit_head SET seq = $M, hash = (SELECT hash FROM audit WHERE seq = $M) WHERE id = 1;" \
    >/dev/null
assert_eq "$(sql "SELECT COUNT(*) FROM audit_checkpoints WHERE seq > $M")" 0 "checkpoint rows left"
offline_verify
assert_rc 1
assert_file_contains "$OUT_FILE" "BROKEN at record $((M + 1)):"
assert_file_contains "$OUT_FILE" "deleted"
offline_verify -o json
assert_rc 1
assert_json .checkpoints.signed_seq "$N" "$OUT_FILE"
run_cli check --data "$DATA" $(store_flag "$DATA")
assert_rc 1
assert_file_contains "$OUT_FILE" "audit_chain    FAILED"
start_server "${SIGNING[@]}"
api GET /api/v1/audit/verify
assert_json .ok false
assert_json .first_bad_seq $((M + 1))
stop_server

# ---------------------------------------------------------------- (c) another key
note "(c) a checkpoint row signed by another key"
restore
sql "UPDATE audit_checkpoints SET key_id = '$(printf 'ab%.0s' {1..32})' WHERE seq = $N" >/dev/null
offline_verify
assert_rc 1
assert_file_contains "$OUT_FILE" "another key"
# ... and a checkpoint file that is not this store's (the trusted key is another one)
restore
printf '%s\n' "$(printf 'cd%.0s' {1..32})" >"$E2E_TMP/other.pub"
run_cli audit verify --data "$DATA" $(store_flag "$DATA") --public-key "$E2E_TMP/other.pub"
assert_rc 1
assert_file_contains "$OUT_FILE" "another key"

# restored, it holds again
restore
offline_verify
assert_rc 0

# ---------------------------------------------------------------- (d) two servers, one key
if [ -n "${GP_TEST_PG:-}" ]; then
    note "(d) PostgreSQL: two servers share the store and the key; only the leader signs"
    start_server "${SIGNING[@]}"
    URL_A=$URL
    PID_A=$SERVER_PID
    ADMIN=$TOKEN
    launch_server "$E2E_TMP/b" --data "$E2E_TMP/b" --store "$(store_url "$DATA")" \
        --listen 127.0.0.1:0 "${SIGNING[@]}"
    URL_B=$URL
    PID_B=$SERVER_PID
    TOKEN=$ADMIN
    assert_eq "$(head -n 1 "$E2E_TMP/b/audit-signing.pub")" "$KEY_ID" "B's public key"
    URL=$URL_A api POST /api/v1/tenants '{"name":"epsilon"}'
    assert_status 201
    URL=$URL_A poll 10 head_signed || fail "no checkpoint of the new head within 10 s"
    URL=$URL_B api GET /api/v1/audit/verify
    assert_json .ok true
    assert_json .checkpoints.signed_seq "$(sql "SELECT seq FROM audit_head")"
    # B stood by: it signed nothing, so it has no checkpoint file
    [ ! -e "$E2E_TMP/b/audit-checkpoints.jsonl" ] || fail "the standing-by server signed"
    SERVER_PID=$PID_B
    stop_server
    SERVER_PID=$PID_A
    stop_server
    offline_verify
    assert_rc 0
fi

done_testing
