#!/usr/bin/env bash
# shellcheck disable=SC2016  # jq filters in single quotes
#
# test_admins.sh - issue 33, items 1 and 5, as each attacker tried them on a
# real server (docs/security.md "Who administers the administrators",
# docs/scheduling.md "Priority classes").
#
# - A second security-admin resets the bootstrap admin's password: 202, an
#   approval of user.credentials that keeps no password in clear; the new
#   password does not log in; the attacker is not platform-admin; it cannot
#   approve its own request, and a service account it could mint tokens for
#   never holds an administrator role.
# - A project-user opts a job out of preemption: 403, audited as denied;
#   a tenant-admin may (the class's non_preemptible_roles); a project-user's
#   class change drops the tenant-admin's opt-out instead of keeping it, and
#   asking for it again is 403; a class that lists project-user lets it.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/security/test_admins.sh
. "$(dirname "$0")/../e2e/lib.sh"

as_api() {
    local tok=$1
    shift
    AUTH_HEADER="Authorization: Bearer $tok" api "$@"
}
login() {
    AUTH_HEADER='' api POST /api/v1/login "{\"name\":\"$1\",\"password\":\"$2\"}"
}
bj() { jq -r "$1" "$BODY_FILE"; }
token_of() {
    login "$1" "$2"
    [ "$STATUS" == 200 ] || fail "login $1: HTTP $STATUS $(cat "$BODY_FILE")"
    bj .token
}

start_server
ADMIN=$TOKEN
# (before approvals arm) ops' part: a class for item 5's jobs
api PUT /api/v1/members/admin '{"role":"ops-engineer"}'
assert_status 200
api POST /api/v1/classes '{"name":"c1","form":"whole","gpu_models":["A100-80GB"],"cpus":1,"memory_gib":1}'
assert_status 201

# ---------------------------------------------------------------- item 1
note "a second security-admin does not become the platform"
api POST /api/v1/users '{"name":"mallory","password":"mallory-Secret-1"}'
assert_status 201
M=$(token_of mallory mallory-Secret-1)
# the bootstrap rule: admin alone grants the second security-admin (waived); approvals arm
api PUT /api/v1/members/mallory '{"role":"security-admin"}'
assert_status 200
# mallory sets a password of its own (admin knew the first one)
as_api "$M" PATCH /api/v1/users/mallory \
    '{"password":"mallory-Own-Secret-2","current_password":"mallory-Secret-1"}'
assert_status 200
as_api "$M" PATCH /api/v1/users/admin '{"password":"Taken-Over-By-M-1"}'
assert_status 202
assert_json .operation user.credentials
RESET=$(bj .id)
login admin Taken-Over-By-M-1
assert_status 401
as_api "$M" POST /api/v1/tenants '{"name":"stolen"}'
assert_status 403
as_api "$M" POST "/api/v1/approvals/$RESET/approve"
assert_status 403
assert_contains "$(bj .error.message)" "own"
assert_eq "$(db_sql "$DATA" "SELECT COUNT(*) FROM approvals WHERE body LIKE '%Taken-Over-By-M-1%'")" \
    0 "approvals holding the password in clear"
# a policy change filed by mallory is still waiting for someone else
as_api "$M" PUT /api/v1/security-policy '{"sensitive_operations":[]}'
assert_status 202
POL=$(bj .id)
as_api "$M" POST "/api/v1/approvals/$POL/approve"
assert_status 403
as_api "$M" GET /api/v1/security-policy
assert_status 200
assert_contains "$(bj '.sensitive_operations | join(",")')" "policy.change"
assert_contains "$(bj '.always_sensitive | join(",")')" "user.credentials"
# a service account's tokens are its administrators': no administrator role for it
api POST /api/v1/users '{"name":"robot","kind":"service"}'
assert_status 201
api PUT /api/v1/members/robot '{"role":"security-admin"}'
assert_status 409
# the audit trail has the request
api GET '/api/v1/audit?action=user.update'
assert_status 200
assert_contains "$(bj '[.items[] | select(.actor == "mallory") | .status] | map(tostring) | join(",")')" "202"

# ---------------------------------------------------------------- item 5
note "preemptibility is policy, not the submitter's choice"
api POST /api/v1/tenants '{"name":"red"}'
assert_status 201
api POST /api/v1/tenants/red/projects '{"name":"p"}'
assert_status 201
for u in rpu radm; do
    api POST /api/v1/users "{\"name\":\"$u\",\"password\":\"$u-Secret-123\",\"tenant\":\"red\"}"
    assert_status 201
done
api PUT /api/v1/tenants/red/projects/p/members/rpu '{"role":"project-user"}'
assert_status 200
api PUT /api/v1/tenants/red/members/radm '{"role":"tenant-admin"}'
assert_status 200
PU=$(token_of rpu rpu-Secret-123)
RA=$(token_of radm radm-Secret-123)
JOBS=/api/v1/tenants/red/projects/p/jobs
as_api "$PU" POST "$JOBS" '{"name":"immune","class":"c1","preemptible":false,"command":["true"]}'
assert_status 403
assert_contains "$(bj .error.message)" "preemption may not stop"
api GET '/api/v1/audit?action=job.submit&result=denied'
assert_status 200
assert_eq "$(bj '[.items[] | select(.actor == "rpu")] | length')" 1 "the refusal audited"
as_api "$PU" POST "$JOBS" '{"name":"plain","class":"c1","command":["true"]}'
assert_status 201
assert_json .preemptible true
PLAIN=$(bj .id)
as_api "$RA" POST "$JOBS" '{"name":"kept","class":"c1","preemptible":false,"command":["true"]}'
assert_status 201
assert_json .preemptible false
KEPT=$(bj .id)
# the project-user may not make its own job immune by a class change either
as_api "$PU" PUT "$JOBS/$PLAIN/priority" '{"priority_class":"normal","preemptible":false}'
assert_status 403
# a tenant-admin's opt-out does not survive a project-user's class change
api PUT /api/v1/tenants/red/projects/p/members/rpu '{"role":"project-admin"}'
assert_status 200
as_api "$PU" PUT "$JOBS/$KEPT/priority" '{"priority_class":"normal"}'
assert_status 200
assert_json .preemptible true
api GET '/api/v1/audit?action=job.priority'
assert_status 200
assert_contains "$(bj '[.items[] | select(.actor == "rpu") | .summary | tostring] | join(" ")')" "preemptible"
# a class the platform lets project-admins opt out in
# (priority_class.change is sensitive: mallory, a second security-admin, approves it)
api POST /api/v1/priority-classes \
    '{"name":"batch","value":50,"non_preemptible_roles":["project-admin"]}'
assert_status 202
as_api "$M" POST "/api/v1/approvals/$(bj .id)/approve"
assert_status 200
assert_json .result_status 201
as_api "$PU" PUT "$JOBS/$PLAIN/priority" '{"priority_class":"batch","preemptible":false}'
assert_status 200
assert_json .preemptible false
api GET /api/v1/priority-classes
assert_status 200
assert_eq "$(bj '.items[] | select(.name == "batch") | .non_preemptible_roles | join(",")')" \
    project-admin "the class lists who may opt out"
# a bad role name is refused, nothing changed
api PUT /api/v1/priority-classes/batch '{"non_preemptible_roles":["boss"]}'
assert_status 400

done_testing
