#!/usr/bin/env bash
# shellcheck disable=SC2119  # start_server takes optional flags
#
# test_governance_cli.sh - identity and governance through the command line
# client against a real server: users and service accounts, login, disabling,
# tokens, role grants at every scope and escalation refusals, the approval of
# sensitive operations by a second security-admin, vendor access, the security
# policy, and audit list/export/verify.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_governance_cli.sh
#
# Password hashing is deliberately slow (argon2id), so the script keeps the
# number of `user create` / `login` calls small.
. "$(dirname "$0")/lib.sh"

# pending_id: the id from "pending approval ID (OPERATION): ..." in the last stdout
pending_id() { sed -n 's/^pending approval \([0-9a-f]\+\) (.*/\1/p' "$OUT_FILE" | head -n 1; }

# assert_pending OPERATION: the last command printed a pending approval; sets PENDING
assert_pending() {
    assert_rc 0
    assert_match "$(head -n 1 "$OUT_FILE")" "^pending approval [0-9a-f]{16,} \\($1\\): " \
        "pending line of 'gpupool $E2E_LAST_CMD'"
    PENDING=$(pending_id)
    assert_file_contains "$OUT_FILE" "gpupool approval approve $PENDING"
}

# roles_of USER: "role@scope[@tenant[/project]]" lines of `user show USER -o json` (admin)
roles_of() {
    gp -o json user show "$1"
    [ "$RC" == 0 ] || { echo "(user show $1 failed: exit $RC)"; return; }
    jq -r '.roles[] | "\(.role)@\(.scope)\(if .tenant then "@" + .tenant else "" end)\(if .project then "/" + .project else "" end)"' \
        "$OUT_FILE" 2>/dev/null | sort | tr '\n' ' '
}

printf 'alice-Secret-1\n' >"$E2E_TMP/pw.alice"
printf 'bob-Secret-2\n' >"$E2E_TMP/pw.bob"
printf 'carol-Secret-3\n' >"$E2E_TMP/pw.carol"
printf 'dave-Secret-4\n' >"$E2E_TMP/pw.dave"
printf 'vic-Secret-5\n' >"$E2E_TMP/pw.vic"
printf 'not-the-password\n' >"$E2E_TMP/pw.wrong"

# ---------------------------------------------------------------- without a server
note "help and usage errors"
for noun in login user token member approval vendor policy audit; do
    run_cli "$noun" --help
    assert_rc 0
    assert_file_contains "$OUT_FILE" "usage: gpupool $noun"
    assert_eq "$(wc -c <"$ERR_FILE")" 0 "stderr of 'gpupool $noun --help'"
done
for nv in "user create" "user disable" "user enable" "token create" "token list" \
    "token revoke" "member grant" "member list" "member revoke" "approval approve" \
    "approval reject" "approval show" "vendor grant" "vendor revoke" "policy set" \
    "audit export"; do
    # shellcheck disable=SC2086  # split "noun verb" on purpose
    run_cli $nv --help
    assert_rc 0
    assert_file_contains "$OUT_FILE" "usage: gpupool $nv"
done
# a password never comes from a flag: without stdin these are usage errors
run_cli --server http://127.0.0.1:1 login alice
assert_rc 2
assert_one_line_error "standard input"
run_cli --server http://127.0.0.1:1 --token x user create alice
assert_rc 2
assert_one_line_error "standard input"
run_cli --server http://127.0.0.1:1 --token x member grant bob viewer --project p
assert_rc 2
assert_one_line_error "--project needs --tenant"
run_cli --server http://127.0.0.1:1 --token x vendor grant vic --node n1
assert_rc 2
assert_one_line_error "--ttl"
run_cli --server http://127.0.0.1:1 --token x policy set
assert_rc 2
assert_one_line_error "nothing to change"
run_cli --server http://127.0.0.1:1 --token x token revoke
assert_rc 2
assert_one_line_error

# ---------------------------------------------------------------- setup
start_server
note "server at $URL"
ADMIN=$TOKEN
gp tenant create research
assert_rc 0
gp tenant create other
assert_rc 0
gp project create --tenant research vision
assert_rc 0

# ---------------------------------------------------------------- users and login
note "users, service accounts, login"
run_in "$E2E_TMP/pw.alice" --server "$URL" --token "$ADMIN" user create alice
assert_rc 0
assert_match "$(field name)" '^alice$' "user create: name"
assert_match "$(field kind)" '^user$' "user create: kind"
assert_match "$(field has_password)" '^true$' "user create: has_password"
assert_file_lacks "$OUT_FILE" "alice-Secret-1"
gp user create --service bot
assert_rc 0
assert_match "$(field kind)" '^service$' "service account kind"
assert_match "$(field has_password)" '^false$' "service account has no password"
# the name is taken (a conflict, not a second account)
run_in "$E2E_TMP/pw.alice" --server "$URL" --token "$ADMIN" user create alice
assert_denied 409
for u in bob carol vic; do
    run_in "$E2E_TMP/pw.$u" --server "$URL" --token "$ADMIN" user create "$u"
    assert_rc 0
done
# dave is research's own user: homed there, so research's admin administers it
run_in "$E2E_TMP/pw.dave" --server "$URL" --token "$ADMIN" user create dave --tenant research
assert_rc 0
assert_match "$(field home)" '^research$' "user create --tenant: home"
gp -o json user list
assert_rc 0
assert_json '[.items[].name] | sort | join(",")' "admin,alice,bob,bot,carol,dave,vic" "$OUT_FILE"
assert_json '[.items[] | select(has("password") or has("password_hash"))] | length' 0 "$OUT_FILE"
gp user list
assert_rc 0
assert_match "$(grep -E '^bot ' "$OUT_FILE")" '^bot +service +false ' "user list row of bot"

run_in "$E2E_TMP/pw.alice" --server "$URL" login alice
assert_rc 0
assert_eq "$(wc -l <"$OUT_FILE")" 1 "login prints one line"
ALICE=$(head -n 1 "$OUT_FILE")
assert_match "$ALICE" '^gpt_[A-Za-z0-9_-]{20,}$' "login token"
assert_file_contains "$ERR_FILE" "token expires at "
as "$ALICE" whoami
assert_rc 0
assert_eq "$(head -n 1 "$OUT_FILE")" "alice (user)" "whoami with alice's login token"
run_in "$E2E_TMP/pw.wrong" --server "$URL" login alice
assert_denied 401
assert_file_contains "$ERR_FILE" "wrong user name or password"
cp "$ERR_FILE" "$E2E_TMP/login-refused.err"
# an unknown user gets the very same answer (no user enumeration)
run_in "$E2E_TMP/pw.wrong" --server "$URL" login nobody
assert_denied 401
assert_eq "$(cat "$ERR_FILE")" "$(cat "$E2E_TMP/login-refused.err")" "refusal for an unknown user"
# a service account has no password to log in with
run_in "$E2E_TMP/pw.wrong" --server "$URL" login bot
assert_denied 401
assert_eq "$(cat "$ERR_FILE")" "$(cat "$E2E_TMP/login-refused.err")" "refusal for a service account"
as "gpt_not-a-real-token" whoami
assert_denied 401

# ---------------------------------------------------------------- tokens
note "tokens"
gp -o json token create --user bot --ttl 3600 --label ci
assert_rc 0
BOT=$(jq -r .token "$OUT_FILE")
BOT_TID=$(jq -r .id "$OUT_FILE")
assert_match "$BOT" '^gpt_' "service account token"
assert_json .user bot "$OUT_FILE"
as "$BOT" whoami
assert_rc 0
assert_eq "$(head -n 1 "$OUT_FILE")" "bot (service)" "whoami with the service account token"
gp token list --user bot
assert_rc 0
assert_eq "$(head -n 1 "$OUT_FILE" | tr -s ' ')" "ID LABEL STATE CREATED_AT EXPIRES_AT" "token list header"
assert_match "$(grep -F "$BOT_TID" "$OUT_FILE")" "^$BOT_TID +ci +active " "token list row"
assert_file_lacks "$OUT_FILE" "$BOT"
gp -o json token list --user bot
assert_rc 0
assert_file_lacks "$OUT_FILE" "$BOT"
assert_file_lacks "$OUT_FILE" "gpt_"
assert_json '[.items[] | select(has("token") or has("hash"))] | length' 0 "$OUT_FILE"
# administrators make tokens for service accounts, not for other people
gp token create --user alice
assert_denied 403
# ttl bounded by the security policy
gp token create --user bot --ttl 10
assert_denied 400
gp token revoke "$BOT_TID" --user bot
assert_rc 0
assert_match "$(field state)" '^revoked$' "token revoke output"
as "$BOT" whoami
assert_denied 401
gp -o json token list --user bot
assert_json ".items[] | select(.id == \"$BOT_TID\") | .state" revoked "$OUT_FILE"
gp token revoke nosuchtoken --user bot
assert_denied 404

# one's own tokens (no --user): alice creates, lists and revokes hers
as "$ALICE" -o json token create --label laptop --ttl 600
assert_rc 0
ALICE2=$(jq -r .token "$OUT_FILE")
ALICE2_TID=$(jq -r .id "$OUT_FILE")
as "$ALICE2" whoami
assert_rc 0
assert_eq "$(head -n 1 "$OUT_FILE")" "alice (user)" "whoami with alice's created token"
as "$ALICE" token list
assert_rc 0
assert_match "$(grep -F "$ALICE2_TID" "$OUT_FILE")" "^$ALICE2_TID +laptop +active " "own token list"
assert_match "$(grep -cE '^[0-9a-f]+ +login +active ' "$OUT_FILE")" '^1$' "the login token is listed"
assert_file_lacks "$OUT_FILE" "$ALICE2"
assert_file_lacks "$OUT_FILE" "$ALICE"
# alice cannot see (nor revoke) bot's tokens
as "$ALICE" token list --user bot
assert_denied 404
as "$ALICE" token revoke "$ALICE2_TID"
assert_rc 0
as "$ALICE2" whoami
assert_denied 401
as "$ALICE" whoami
assert_rc 0

# ---------------------------------------------------------------- members
note "member grant/list/revoke at every scope"
gp member grant alice tenant-admin --tenant research
assert_rc 0
assert_match "$(field role)" '^tenant-admin$' "tenant grant: role"
assert_match "$(field scope)" '^tenant$' "tenant grant: scope"
assert_match "$(field tenant)" '^research$' "tenant grant: tenant"
gp member list --tenant research
assert_rc 0
assert_eq "$(head -n 1 "$OUT_FILE" | tr -s ' ')" "USER ROLE SCOPE TENANT PROJECT GRANTED_BY" "member list header"
assert_match "$(grep -E '^alice ' "$OUT_FILE")" '^alice +tenant-admin +tenant +research +- +admin$' "tenant member row"
# the tenant-admin grants inside its tenant
as "$ALICE" member grant dave project-user --tenant research --project vision
assert_rc 0
assert_match "$(field project)" '^vision$' "project grant: project"
as "$ALICE" member list --tenant research --project vision
assert_rc 0
assert_match "$(grep -E '^dave ' "$OUT_FILE")" '^dave +project-user +project +research +vision +alice$' "project member row"
as "$ALICE" member grant dave viewer --tenant research
assert_rc 0
assert_eq "$(roles_of dave)" "project-user@project@research/vision viewer@tenant@research " "dave's roles"
gp member list
assert_rc 0
assert_match "$(grep -E '^admin +platform-admin' "$OUT_FILE")" '^admin +platform-admin +global ' "global member list"
assert_eq "$(grep -cE '^(alice|dave) ' "$OUT_FILE")" 0 "tenant/project roles are not global members"

note "escalation is refused"
as "$ALICE" member grant dave platform-admin
assert_denied 403
as "$ALICE" member grant dave security-admin
assert_denied 403
as "$ALICE" member grant alice security-admin
assert_denied 403
as "$ALICE" member grant dave tenant-admin --tenant other
assert_denied 404
assert_file_contains "$ERR_FILE" "not found"
as "$ALICE" member list --tenant other
assert_denied 404
# a global role does not fit a tenant scope
as "$ALICE" member grant dave platform-admin --tenant research
assert_denied 400
# a security-admin only grants security-admin, so nothing changed for dave
assert_eq "$(roles_of dave)" "project-user@project@research/vision viewer@tenant@research " "dave's roles after refusals"
# revoking: global needs --role; tenant and project scope do not
gp member revoke dave
assert_denied 400
as "$ALICE" member revoke dave --tenant research
assert_rc 0
as "$ALICE" member revoke dave --tenant research --project vision
assert_rc 0
assert_eq "$(roles_of dave)" "" "dave's roles after revoke"
as "$ALICE" member revoke dave --tenant research
assert_denied 404
as "$ALICE" member grant dave project-user --tenant research --project vision
assert_rc 0

# ---------------------------------------------------------------- disable / enable
note "user disable / enable"
run_in "$E2E_TMP/pw.dave" --server "$URL" login dave
assert_rc 0
DAVE=$(head -n 1 "$OUT_FILE")
as "$DAVE" whoami
assert_rc 0
assert_eq "$(head -n 1 "$OUT_FILE")" "dave (user)" "whoami as dave"
gp user disable admin
assert_denied 400
assert_file_contains "$ERR_FILE" "yourself"
# a tenant-admin administers users of its tenant only
as "$ALICE" user disable bob
assert_denied 404
as "$DAVE" user disable alice
assert_denied 403 404
gp user disable dave
assert_rc 0
assert_match "$(field disabled)" '^true$' "user disable output"
as "$DAVE" whoami
assert_denied 401
run_in "$E2E_TMP/pw.dave" --server "$URL" login dave
assert_denied 401
assert_eq "$(cat "$ERR_FILE")" "$(cat "$E2E_TMP/login-refused.err")" "refusal for a disabled user (right password)"
gp user enable dave
assert_rc 0
assert_match "$(field disabled)" '^false$' "user enable output"
as "$DAVE" whoami
assert_rc 0
assert_eq "$(head -n 1 "$OUT_FILE")" "dave (user)" "dave's token works again"

note "passwords and who administers whom"
printf 'dave-New-Secret-6\n' >"$E2E_TMP/pw.dave2"
printf 'dave-New-Secret-6\ndave-Secret-4\n' >"$E2E_TMP/pw.dave-change"
# changing one's own password needs the current one (line 2)
run_in "$E2E_TMP/pw.dave2" --server "$URL" --token "$DAVE" user passwd dave
assert_denied 403
run_in "$E2E_TMP/pw.dave-change" --server "$URL" --token "$DAVE" user passwd dave
assert_rc 0
assert_eq "$(cat "$OUT_FILE")" "password of dave changed" "user passwd output"
run_in "$E2E_TMP/pw.dave" --server "$URL" login dave
assert_denied 401
run_in "$E2E_TMP/pw.dave2" --server "$URL" login dave
assert_rc 0
assert_match "$(cat "$OUT_FILE")" '^gpt_' "login with the new password"
run_in "$E2E_TMP/pw.dave2" --server "$URL" --token "$ADMIN" user passwd bot
assert_denied 400
assert_file_contains "$ERR_FILE" "service accounts have no password"
# a tenant-admin sees itself and the users of its tenant, nobody else
as "$ALICE" -o json user list
assert_rc 0
assert_json '[.items[].name] | sort | join(",")' "alice,dave" "$OUT_FILE"
# a token id is revoked only through its owner: alice cannot revoke dave's
as "$DAVE" -o json token list
DAVE_TID=$(jq -r '.items[0].id' "$OUT_FILE")
assert_match "$DAVE_TID" '^[0-9a-f]{16,}$' "dave's token id"
as "$ALICE" token revoke "$DAVE_TID"
assert_denied 404
as "$DAVE" whoami
assert_rc 0

# ---------------------------------------------------------------- approvals
note "approvals: a second security-admin"
# no second security-admin has existed yet: this grant goes through at once
gp member grant bob security-admin
assert_rc 0
assert_match "$(field role)" '^security-admin$' "first security-admin grant"
assert_file_lacks "$OUT_FILE" "pending"
assert_eq "$(roles_of bob)" "security-admin@global " "bob's roles"
run_in "$E2E_TMP/pw.bob" --server "$URL" login bob
assert_rc 0
BOB=$(head -n 1 "$OUT_FILE")

gp member grant carol ops-engineer
assert_pending member.grant_global
A_CAROL=$PENDING
assert_eq "$(roles_of carol)" "" "carol's roles while pending"
gp -o json approval show "$A_CAROL"
assert_rc 0
assert_json .state pending "$OUT_FILE"
assert_json .requester admin "$OUT_FILE"
assert_json .operation member.grant_global "$OUT_FILE"
# nobody approves their own request
gp approval approve "$A_CAROL"
assert_denied 403
assert_file_contains "$ERR_FILE" "their own"
gp approval reject "$A_CAROL"
assert_denied 403
# only security-admins decide; others do not even see the request
as "$ALICE" approval approve "$A_CAROL"
assert_denied 403 404
as "$ALICE" approval show "$A_CAROL"
assert_denied 404
as "$BOB" approval list --state pending
assert_rc 0
assert_match "$(grep -F "$A_CAROL" "$OUT_FILE")" "^$A_CAROL +member.grant_global +admin +pending " "approval list row"
assert_eq "$(roles_of carol)" "" "carol's roles after refused decisions"
# admin created bob with a password it knows: bob decides none of admin's requests until bob
# has set a password of his own (docs/security.md "Who administers the administrators")
as "$BOB" approval approve "$A_CAROL" --reason "on call rota"
assert_denied 403
assert_file_contains "$ERR_FILE" "password"
printf 'bob-Own-Secret-3\nbob-Secret-2\n' >"$E2E_TMP/pw.bob2"
run_in "$E2E_TMP/pw.bob2" --server "$URL" --token "$BOB" user passwd bob
assert_rc 0
as "$BOB" approval approve "$A_CAROL" --reason "on call rota"
assert_rc 0
assert_match "$(field state)" '^approved$' "approve: state"
assert_match "$(field decided_by)" '^bob$' "approve: decided_by"
assert_match "$(field result_status)" '^200$' "approve: result_status"
assert_eq "$(roles_of carol)" "ops-engineer@global " "carol's roles after approval"
gp member list
assert_match "$(grep -E '^carol ' "$OUT_FILE")" '^carol +ops-engineer +global ' "carol in the global member list"
# an approval is used once
as "$BOB" approval approve "$A_CAROL"
assert_denied 409
assert_file_contains "$ERR_FILE" "already approved"
as "$BOB" approval reject "$A_CAROL"
assert_denied 409

note "approvals: reject"
gp member grant dave ops-engineer
assert_pending member.grant_global
A_DAVE=$PENDING
as "$BOB" approval reject "$A_DAVE" --reason "not needed"
assert_rc 0
assert_match "$(field state)" '^rejected$' "reject: state"
as "$BOB" approval approve "$A_DAVE"
assert_denied 409
assert_file_contains "$ERR_FILE" "already rejected"
gp -o json approval show "$A_DAVE"
assert_json .state rejected "$OUT_FILE"
assert_json .decided_by bob "$OUT_FILE"
assert_json .reason "not needed" "$OUT_FILE"
assert_json 'has("result")' false "$OUT_FILE"
assert_eq "$(roles_of dave)" "project-user@project@research/vision " "dave's roles after a rejected grant"
gp approval list --state rejected
assert_rc 0
assert_eq "$(grep -c "^$A_DAVE " "$OUT_FILE")" 1 "approval list --state rejected"
assert_eq "$(grep -c "^$A_CAROL " "$OUT_FILE")" 0 "approved request not in the rejected list"
gp approval show nosuchapproval
assert_denied 404
# a security-admin reads users but administers none, and grants only security-admin
as "$BOB" user show alice
assert_rc 0
assert_match "$(field roles)" '"tenant-admin"' "user show lists the roles"
as "$BOB" user disable alice
assert_denied 403
as "$BOB" token list --user alice
assert_denied 403
as "$BOB" member revoke admin --role platform-admin
assert_denied 403

# ---------------------------------------------------------------- vendor access
note "vendor access"
run_in "$E2E_TMP/pw.carol" --server "$URL" login carol
assert_rc 0
CAROL=$(head -n 1 "$OUT_FILE")
# only ops-engineers manage vendor access
gp vendor grant vic --ttl 3600 --node gpu-node-1
assert_denied 403
# vendor access goes to vendor-only accounts
as "$CAROL" vendor grant alice --ttl 3600 --node gpu-node-1
assert_denied 409
as "$CAROL" vendor grant vic --ttl 10 --node gpu-node-1
assert_denied 400
as "$CAROL" vendor grant vic --ttl 3600 --node gpu-node-1 --work-order wo-7
assert_pending vendor.create
A_VIC=$PENDING
as "$BOB" approval approve "$A_VIC"
assert_rc 0
assert_match "$(field state)" '^approved$' "vendor approval: state"
assert_match "$(field result_status)" '^201$' "vendor approval: result_status"
as "$CAROL" -o json approval show "$A_VIC"
assert_rc 0
GRANT=$(jq -r '.result.id // empty' "$OUT_FILE")
assert_match "$GRANT" '^[0-9a-f]{16,}$' "vendor grant id in the approval result"
assert_json .result.state active "$OUT_FILE"
as "$CAROL" vendor list
assert_rc 0
assert_eq "$(head -n 1 "$OUT_FILE" | tr -s ' ')" "ID USER STATE NODES WORK_ORDERS EXPIRES_AT" "vendor list header"
assert_match "$(grep -F "$GRANT" "$OUT_FILE")" "^$GRANT +vic +active +\\[\"gpu-node-1\"\\] +\\[\"wo-7\"\\] " "vendor list row"
run_in "$E2E_TMP/pw.vic" --server "$URL" login vic
assert_rc 0
VIC=$(head -n 1 "$OUT_FILE")
as "$VIC" whoami
assert_rc 0
assert_eq "$(head -n 1 "$OUT_FILE")" "vic (user)" "whoami as the vendor"
assert_match "$(sed -n 2p "$OUT_FILE")" '^ +vendor +vendor' "the vendor's role"
as "$VIC" -o json vendor list
assert_rc 0
assert_json '[.items[].id] | join(",")' "$GRANT" "$OUT_FILE"
# a vendor sees no tenant data and manages nothing
as "$VIC" vendor revoke "$GRANT"
assert_denied 403
as "$VIC" tenant show research
assert_denied 403 404
# a vendor account holds no other role
gp member grant vic viewer --tenant research
assert_denied 409
as "$CAROL" vendor revoke "$GRANT"
assert_rc 0
assert_match "$(field state)" '^revoked$' "vendor revoke output"
as "$VIC" whoami
assert_denied 401
assert_file_contains "$ERR_FILE" "vendor access"
as "$CAROL" -o json vendor list
assert_json ".items[] | select(.id == \"$GRANT\") | .state" revoked "$OUT_FILE"
# every call a vendor makes, reads included, is audited
as "$BOB" -o json audit list --actor vic
assert_json '[.items[].action] | unique | join(",")' "tenant.get,user.login,user.whoami,vendor.list,vendor.revoke" "$OUT_FILE"

# ---------------------------------------------------------------- security policy
note "security policy"
gp policy show
assert_rc 0
assert_match "$(field approval_ttl_seconds)" '^86400$' "default approval ttl"
assert_file_contains "$OUT_FILE" '"member.grant_global"'
assert_file_contains "$OUT_FILE" '"audit.export"'
as "$ALICE" policy show
assert_denied 403
as "$CAROL" policy set --approval-ttl 600
assert_denied 403
as "$BOB" policy set --approval-ttl 5
assert_denied 400
# changing the policy is itself a sensitive operation (policy.change)
as "$BOB" policy set --approval-ttl 600
assert_pending policy.change
A_POLICY=$PENDING
as "$BOB" -o json policy show
assert_json .approval_ttl_seconds 86400 "$OUT_FILE"
gp approval approve "$A_POLICY"
assert_rc 0
assert_match "$(field state)" '^approved$' "policy approval: state"
assert_match "$(field result_status)" '^200$' "policy approval: result_status"
as "$BOB" -o json approval show "$A_POLICY"
assert_json .result.approval_ttl_seconds 600 "$OUT_FILE"
as "$BOB" -o json policy show
assert_json .approval_ttl_seconds 600 "$OUT_FILE"
assert_json .login_token_ttl_seconds 43200 "$OUT_FILE"

# ---------------------------------------------------------------- audit
note "audit list filters"
as "$BOB" -o json audit list --actor bob --action approval.approve --limit 1000
assert_rc 0
assert_json '[.items[] | select(.actor != "bob" or .action != "approval.approve")] | length' 0 "$OUT_FILE"
assert_json '[.items[] | select(.result == "ok")] | length' 2 "$OUT_FILE"
assert_json '[.items[] | select(.result != "ok")] | length > 0' true "$OUT_FILE"
as "$BOB" -o json audit list --actor bob --action approval.approve --result ok
assert_json '.items | length' 2 "$OUT_FILE"
as "$BOB" -o json audit list --actor admin --action member. --limit 1000
assert_json '.items | length > 5' true "$OUT_FILE"
assert_json '[.items[] | select(.actor != "admin" or (.action | startswith("member.") | not))] | length' 0 "$OUT_FILE"
# refusals are recorded: alice's escalation attempts
as "$BOB" -o json audit list --actor alice --result denied --limit 1000
assert_json '[.items[] | select(.action == "member.grant")] | length >= 3' true "$OUT_FILE"
# the table form
as "$BOB" audit list --actor carol --action vendor.create
assert_rc 0
assert_eq "$(head -n 1 "$OUT_FILE" | tr -s ' ')" "SEQ TIME ACTOR ACTION RESULT STATUS TENANT TARGET_TYPE TARGET_ID" "audit list header"
assert_eq "$(wc -l <"$OUT_FILE")" 4 "carol's vendor.create events (+ header)"
assert_match "$(sed -n 2p "$OUT_FILE")" '^[0-9]+ +[0-9T:.-]+Z +carol +vendor\.create +error +409 +- +vendor-access +alice$' "carol's vendor grant to a non-vendor"
assert_match "$(sed -n 3p "$OUT_FILE")" '^[0-9]+ +[0-9T:.-]+Z +carol +vendor\.create +error +400 ' "carol's vendor grant with a bad ttl"
assert_match "$(sed -n 4p "$OUT_FILE")" '^[0-9]+ +[0-9T:.-]+Z +carol +vendor\.create +ok +202 +- +vendor-access +vic$' "carol's pending vendor grant"
# the approved request ran on the approver's word, on behalf of the requester
as "$BOB" -o json audit list --actor bob --action vendor.create
assert_json '.items | length' 1 "$OUT_FILE"
assert_json '.items[0] | "\(.on_behalf) \(.result) \(.status) \(.target.id)"' "carol ok 201 $GRANT" "$OUT_FILE"
assert_json ".items[0].summary.approval" "$A_VIC" "$OUT_FILE"
# a tenant-admin reads the audit of its own tenant, and only that
as "$ALICE" -o json audit list --tenant research --action member.grant --result ok
assert_rc 0
assert_json '[.items[] | select(.tenant != "research")] | length' 0 "$OUT_FILE"
assert_json '[.items[] | select(.actor == "alice")] | length >= 3' true "$OUT_FILE"
as "$ALICE" audit list --tenant other
assert_denied 404
# who sees which approvals: a security-admin all, anyone else only their own
as "$CAROL" -o json approval list
assert_rc 0
assert_json '[.items[].id] | join(",")' "$A_VIC" "$OUT_FILE"
as "$BOB" -o json approval list
assert_json "[.items[].id] | map(select(. == \"$A_CAROL\" or . == \"$A_DAVE\" or . == \"$A_VIC\" or . == \"$A_POLICY\")) | length" 4 "$OUT_FILE"
# only security-admins read the whole audit
as "$ALICE" audit list
assert_denied 403
as "$CAROL" audit verify
assert_denied 403

note "audit export needs approval"
as "$BOB" audit export --actor carol
assert_pending audit.export
A_EXPORT=$PENDING
as "$BOB" -o json approval show "$A_EXPORT"
assert_json .state pending "$OUT_FILE"
# created under the new policy: it expires 600 s after it was made
assert_json '((.expires_at | sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601) - (.created_at | sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601))' 600 "$OUT_FILE"
as "$BOB" approval approve "$A_EXPORT"
assert_denied 403
gp approval approve "$A_EXPORT"
assert_rc 0
assert_match "$(field state)" '^approved$' "export approval: state"
assert_match "$(field result_status)" '^200$' "export approval: result_status"
as "$BOB" -o json approval show "$A_EXPORT"
assert_rc 0
assert_json '.result | type' string "$OUT_FILE"
jq -r .result "$OUT_FILE" | grep -v '^$' >"$E2E_TMP/export.jsonl"
assert_match "$(wc -l <"$E2E_TMP/export.jsonl")" '^ *([3-9]|[1-9][0-9]+)$' "exported lines"
# JSON Lines: every line one event, every one matching the stored --actor filter
assert_eq "$(jq -c 'select(.actor != "carol")' "$E2E_TMP/export.jsonl" | wc -l)" 0 "exported events of other actors"
assert_eq "$(jq -c . "$E2E_TMP/export.jsonl" | wc -l)" "$(wc -l <"$E2E_TMP/export.jsonl")" "every exported line is one JSON event"
assert_eq "$(jq -r 'select(.action == "vendor.create") | .status' "$E2E_TMP/export.jsonl" | tr '\n' ' ')" "409 400 202 " "carol's vendor.create events in the export"
assert_match "$(jq -r 'select(.action == "user.login") | .result' "$E2E_TMP/export.jsonl" | head -n 1)" '^ok$' "carol's login is in the export"
assert_match "$(jq -r .seq "$E2E_TMP/export.jsonl" | tr '\n' ' ')" '^([0-9]+ )+$' "exported seq numbers"
assert_eq "$(jq -r .seq "$E2E_TMP/export.jsonl" | sort -n | tr '\n' ' ')" \
    "$(jq -r .seq "$E2E_TMP/export.jsonl" | tr '\n' ' ')" "export is oldest first"
# nobody but the requester and security-admins sees a request (and its export)
as "$CAROL" approval show "$A_EXPORT"
assert_denied 404

note "a tenant-admin exports its tenant's audit, after approval"
as "$ALICE" audit export
assert_denied 403
as "$ALICE" audit export --tenant research
assert_pending audit.export
A_TEXPORT=$PENDING
as "$ALICE" -o json approval show "$A_TEXPORT"
assert_rc 0
assert_json '"\(.state) \(.tenant) \(.requester)"' "pending research alice" "$OUT_FILE"
as "$BOB" approval approve "$A_TEXPORT"
assert_rc 0
as "$ALICE" -o json approval show "$A_TEXPORT"
assert_json .state approved "$OUT_FILE"
jq -r .result "$OUT_FILE" | grep -v '^$' >"$E2E_TMP/texport.jsonl"
assert_match "$(jq -r .action "$E2E_TMP/texport.jsonl" | sort -u | tr '\n' ' ')" 'member\.grant ' "tenant export holds the member grants"
assert_eq "$(jq -c 'select(.tenant != "research")' "$E2E_TMP/texport.jsonl" | wc -l)" 0 "events of other tenants in the tenant export"

note "an approved change that fails is reported as failed"
as "$BOB" policy set --login-ttl 3600
assert_pending policy.change
A_FAIL=$PENDING
gp user disable bob
assert_rc 0
gp approval approve "$A_FAIL"
assert_rc 1
assert_one_line_error "approved, but the requested change failed"
assert_match "$(field state)" '^failed$' "failed approval: state"
assert_match "$(field result_status)" '^403$' "failed approval: result_status"
gp -o json policy show
assert_json .login_token_ttl_seconds 43200 "$OUT_FILE"
gp approval list --state failed
assert_eq "$(grep -c "^$A_FAIL " "$OUT_FILE")" 1 "approval list --state failed"
# approvals stay armed while the only other security-admin is away
gp -o json member grant dave ops-engineer
assert_rc 0
assert_json .state pending "$OUT_FILE"
assert_json '.message | contains("no other security-admin can approve it now")' true "$OUT_FILE"
A_ALONE=$(jq -r .id "$OUT_FILE")
gp user enable bob
assert_rc 0
as "$BOB" approval reject "$A_ALONE"
assert_rc 0
assert_match "$(field state)" '^rejected$' "reject after re-enabling"
assert_eq "$(roles_of dave)" "project-user@project@research/vision " "dave's roles at the end"

note "the chain is intact"
as "$BOB" audit verify
assert_rc 0
assert_match "$(head -n 1 "$OUT_FILE")" '^audit chain OK: [0-9]+ records, head [0-9a-f]+$' "audit verify output"

# Known bug, kept last (docs/governance.md: "A vendor account with no live
# grant gets 401 on every call, at once"): POST /api/v1/login for a vendor
# whose only grant was revoked answers 200 with a fresh (unusable) token.
# (The server is stopped first, so that its clean exit is checked either way.)
note "a vendor whose access was revoked cannot log in"
run_in "$E2E_TMP/pw.vic" --server "$URL" login vic
VIC_LOGIN_RC=$RC
stop_server
RC=$VIC_LOGIN_RC
assert_denied 401
done_testing
