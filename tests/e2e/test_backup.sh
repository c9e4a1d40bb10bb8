#!/usr/bin/env bash
# test_backup.sh - `gpupool backup` and `gpupool restore` (docs/operations.md):
# a backup taken while a server takes writes (API calls, an agent's
# heartbeats, signed audit checkpoints every few events) restores into a new
# folder where a server starts, and `gpupool check` and `gpupool audit verify`
# pass there; a restore never overwrites a data folder; damaged or foreign
# files are refused; a PostgreSQL store points to pg_dump.
. "$(dirname "$0")/lib.sh"

# PostgreSQL: the pg_dump procedure of docs/operations.md, under the same load
if [ -n "${GP_TEST_PG:-}" ]; then
    note "a PostgreSQL store: backup points to pg_dump"
    run_cli backup --store "$GP_TEST_PG/postgres" --to "$E2E_TMP/x.backup"
    assert_rc 2
    assert_one_line_error "pg_dump"
    PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    DATA=$E2E_TMP/data
    mkdir -p "$E2E_TMP/keys" && chmod 700 "$E2E_TMP/keys"
    start_server --audit-key "$E2E_TMP/keys/audit.key" --audit-checkpoint-interval 1s \
        --audit-checkpoint-events 5
    for t in t0 t1 t2; do
        gp tenant create "$t"
        assert_rc 0
    done
    (
        i=0
        while [ ! -e "$E2E_TMP/stop" ]; do
            i=$((i + 1))
            curl -s -o /dev/null -X POST -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
                --data-binary "{\"name\":\"load-$i\"}" "$URL/api/v1/tenants"
        done
    ) &
    WRITER=$!
    E2E_PIDS+=("$WRITER")
    sleep 1.5
    # the checkpoint file first, then the dump (one repeatable-read snapshot)
    cp "$DATA/audit-checkpoints.jsonl" "$E2E_TMP/cp.jsonl"
    cp "$DATA/audit-signing.pub" "$E2E_TMP/pub"
    E2E_LAST_CMD="pg_dump"
    "$PGBIN/pg_dump" --format=custom --no-owner --enable-row-security --file="$E2E_TMP/x.dump" \
        "$(store_url "$DATA")" 2>"$ERR_FILE"
    assert_eq "$?" 0 "pg_dump under load"
    : >"$E2E_TMP/stop"
    wait "$WRITER"
    NEW=$E2E_TMP/restored
    mkdir -p "$NEW" && chmod 700 "$NEW"
    "$PGBIN/pg_restore" --no-owner --exit-on-error --dbname="$(store_url "$NEW")" "$E2E_TMP/x.dump" 2>"$ERR_FILE"
    assert_eq "$?" 0 "pg_restore into a new database"
    run_cli check --store "$(store_url "$NEW")"
    assert_rc 0
    run_cli audit verify --store "$(store_url "$NEW")" --public-key "$E2E_TMP/pub" --checkpoints "$E2E_TMP/cp.jsonl"
    assert_rc 0
    ADMIN=$TOKEN
    stop_server
    cp "$E2E_TMP/cp.jsonl" "$NEW/audit-checkpoints.jsonl"
    launch_server "$NEW" --data "$NEW" --listen 127.0.0.1:0 --audit-key "$E2E_TMP/keys/audit.key" \
        --audit-checkpoint-interval 1s
    TOKEN=$ADMIN # the users came with the dump; admin.token is the operator's copy
    gp -o json tenant show t2
    assert_rc 0
    gp tenant create after-restore
    assert_rc 0
    sleep 2.5
    gp -o json audit verify
    assert_rc 0
    assert_json .ok true "$OUT_FILE"
    stop_server
    done_testing
    exit 0
fi

DATA=$E2E_TMP/data
start_server --audit-checkpoint-interval 1s --audit-checkpoint-events 5
gp member grant admin ops-engineer
assert_rc 0
for t in t0 t1 t2; do
    gp tenant create "$t"
    assert_rc 0
done
gp -o json jointoken create --ttl 600 --uses 2
JT=$(jout .token)
GPUPOOL_JOIN_TOKEN=$JT "$GPUPOOL_BIN" agent --server "$URL" --simulate 2 --interval 1 \
    --state-dir "$E2E_TMP/agent" >"$E2E_TMP/agent.out" 2>"$E2E_TMP/agent.err" </dev/null &
AGENT=$!
E2E_PIDS+=("$AGENT")
poll 15 bash -c "curl -s -H 'Authorization: Bearer $TOKEN' $URL/api/v1/nodes | jq -e '.items | length == 2' >/dev/null" ||
    fail "the simulated nodes did not join"

note "backup while the server takes writes"
# a writer: tenants and projects as fast as the server takes them, until told to stop
(
    i=0
    while [ ! -e "$E2E_TMP/stop" ]; do
        i=$((i + 1))
        curl -s -o /dev/null -X POST -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
            --data-binary "{\"name\":\"load-$i\"}" "$URL/api/v1/tenants"
        curl -s -o /dev/null -X POST -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
            --data-binary "{\"name\":\"p\"}" "$URL/api/v1/tenants/load-$i/projects"
    done
    echo "$i" >"$E2E_TMP/writes"
) &
WRITER=$!
E2E_PIDS+=("$WRITER")
sleep 1.5
for n in 1 2 3; do
    run_cli backup --data "$DATA" --to "$E2E_TMP/b$n.backup" --include-key
    assert_rc 0
    assert_file_contains "$OUT_FILE" "written to $E2E_TMP/b$n.backup"
    sleep 0.5
done
: >"$E2E_TMP/stop"
wait "$WRITER"
assert_ne "$(cat "$E2E_TMP/writes")" 0 "writes during the backups"
note "$(cat "$E2E_TMP/writes") tenant writes ran during the backups"
B=$E2E_TMP/b3.backup
assert_eq "$(stat -c %a "$B")" 600 "the backup's mode (it holds the signing key)"
assert_eq "$(tar tf "$B" | tr '\n' ' ')" \
    "gpupool-backup.json audit-checkpoints.jsonl audit-signing.pub audit-signing.key gpupool.db " \
    "the backup is a tar of the data folder's state"
tar xOf "$B" gpupool-backup.json >"$E2E_TMP/manifest.json"
assert_json .format gpupool-backup-v1 "$E2E_TMP/manifest.json"
assert_match "$(jq -r .schema_version "$E2E_TMP/manifest.json")" '^[1-9][0-9]*$' "schema version"
assert_eq "$(tar tf "$B" | grep -c admin.token)" 0 "admin.token stays out"
# by default the signing key stays out of backups (docs/audit.md); restore asks for it
run_cli backup --data "$DATA" --to "$E2E_TMP/nokey.backup"
assert_rc 0
assert_file_contains "$OUT_FILE" "audit-signing.key apart from backups"
assert_eq "$(tar tf "$E2E_TMP/nokey.backup" | grep -c audit-signing.key)" 0 "no key without --include-key"
# a backup never overwrites a file
run_cli backup --data "$DATA" --to "$B"
assert_rc 1
assert_one_line_error "exists"
run_cli backup --data "$E2E_TMP/nowhere" --to "$E2E_TMP/nothing.backup"
assert_rc 1
assert_one_line_error "no store"
assert_eq "$(ls "$E2E_TMP" | grep -c 'nothing.backup\|gpupool-backup')" 0 "nothing left behind"
run_cli backup --data "$DATA"
assert_rc 2
assert_one_line_error "--to FILE"
# the tenants the backup saw
tar xOf "$B" gpupool.db >"$E2E_TMP/copy.db"
TENANTS_AT_BACKUP=$(sqlite3 "$E2E_TMP/copy.db" 'SELECT COUNT(*) FROM tenants')
assert_match "$TENANTS_AT_BACKUP" '^[0-9]+$' "tenants in the copy"

note "restore into a new folder; a server starts there; check and audit verify pass"
NEW=$E2E_TMP/restored
run_cli restore --from "$B" --data "$NEW"
assert_rc 0
assert_file_contains "$OUT_FILE" "restored $B into $NEW"
assert_eq "$(stat -c %a "$NEW/audit-signing.key")" 600 "the key's mode"
assert_eq "$(stat -c %a "$NEW")" 700 "the folder's mode"
run_cli check --data "$NEW"
assert_rc 0
run_cli audit verify --data "$NEW"
assert_rc 0
# the original goes on; the restored copy gets a server of its own
kill -TERM "$AGENT"
wait "$AGENT" 2>/dev/null
stop_server
ORIG_URL=$URL
launch_server "$NEW" --data "$NEW" --listen 127.0.0.1:0 --audit-checkpoint-interval 1s
TOKEN=$(head -n 1 "$DATA/admin.token") # admin.token is not in the backup: the old one works
assert_eq "$(db_sql "$NEW" 'SELECT COUNT(*) FROM tenants')" "$TENANTS_AT_BACKUP" "the restored store's tenants"
gp -o json tenant show t2
assert_rc 0
assert_json .name t2 "$OUT_FILE"
gp -o json node list
assert_json '.items | length' 2 "$OUT_FILE"
# new writes and checkpoints on the restored store extend the chain and the file
gp tenant create after-restore
assert_rc 0
sleep 2.5
gp -o json audit verify
assert_rc 0
assert_json .ok true "$OUT_FILE"
assert_json '.checkpoints.file > 0' true "$OUT_FILE"
stop_server
run_cli check --data "$NEW"
assert_rc 0
run_cli audit verify --data "$NEW"
assert_rc 0
[ "$ORIG_URL" != "" ] || fail "no URL"
# every backup taken under load is consistent, not just the last one
note "a backup without the key: restore takes it with --audit-key, and only the right one"
run_cli restore --from "$E2E_TMP/nokey.backup" --data "$E2E_TMP/k1"
assert_rc 1
assert_one_line_error "--audit-key"
assert_eq "$(ls -A "$E2E_TMP/k1" | wc -l)" 0 "nothing restored without the key"
mkdir -p "$E2E_TMP/otherkey" && chmod 700 "$E2E_TMP/otherkey"
printf '%064d\n' 7 >"$E2E_TMP/otherkey/k" && chmod 600 "$E2E_TMP/otherkey/k"
run_cli restore --from "$E2E_TMP/nokey.backup" --data "$E2E_TMP/k1" --audit-key "$E2E_TMP/otherkey/k"
assert_rc 1
assert_one_line_error "not the key of the backup's public key"
assert_eq "$(ls -A "$E2E_TMP/k1" | wc -l)" 0 "nothing restored with a wrong key"
run_cli restore --from "$E2E_TMP/nokey.backup" --data "$E2E_TMP/k1" --audit-key "$DATA/audit-signing.key"
assert_rc 0
assert_eq "$(stat -c %a "$E2E_TMP/k1/audit-signing.key")" 600 "the given key's mode"
run_cli check --data "$E2E_TMP/k1"
assert_rc 0
run_cli audit verify --data "$E2E_TMP/k1"
assert_rc 0
for n in 1 2; do
    rm -rf "$E2E_TMP/r$n"
    run_cli restore --from "$E2E_TMP/b$n.backup" --data "$E2E_TMP/r$n"
    assert_rc 0
    run_cli check --data "$E2E_TMP/r$n"
    assert_rc 0
    run_cli audit verify --data "$E2E_TMP/r$n"
    assert_rc 0
done

note "restore never overwrites, refuses foreign and damaged files"
run_cli restore --from "$B" --data "$NEW"
assert_rc 1
assert_one_line_error "not empty"
assert_eq "$(ls "$NEW" | grep -c '^gpupool.db$')" 1 "the folder is untouched"
run_cli restore --from "$B"
assert_rc 2
echo "not a backup" >"$E2E_TMP/junk"
run_cli restore --from "$E2E_TMP/junk" --data "$E2E_TMP/j1"
assert_rc 1
assert_one_line_error "not a gpupool backup"
assert_eq "$(ls -A "$E2E_TMP/j1" | wc -l)" 0 "nothing restored from junk"
(cd "$E2E_TMP" && tar cf other.tar junk)
run_cli restore --from "$E2E_TMP/other.tar" --data "$E2E_TMP/j2"
assert_rc 1
assert_one_line_error "not a gpupool backup"
head -c $(($(stat -c %s "$B") / 2)) "$B" >"$E2E_TMP/cut.backup"
run_cli restore --from "$E2E_TMP/cut.backup" --data "$E2E_TMP/j3"
assert_rc 1
assert_one_line_error
assert_eq "$(ls -A "$E2E_TMP/j3" | wc -l)" 0 "nothing left from a cut-short backup"

done_testing
