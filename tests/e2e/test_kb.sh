#!/usr/bin/env bash
# shellcheck disable=SC2119  # start_server takes optional flags
#
# test_kb.sh - knowledge bases end to end, through the CLI, the REST API and
# the gateway with the official openai client (tests/gateway/client.mjs).
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_kb.sh
#
# Checked: ingestion of text, markdown, html and pdf (a PDF written by this
# script; read by the server's pdftotext), the refusal of formats that cannot
# be extracted (415) and of broken content (400), the body limit (413);
# ranking (the document about the query comes first); chunk boundaries and
# overlap (offsets slice the document's text); deletion (gone from results
# at once); the roles (project users query, only admins write); refusal (404)
# of every KB endpoint across tenants and across projects; scores computed
# from each tenant's own documents only (a fresh tenant with the same
# documents gets the same scores, a tenant with many more gets others on
# SQLite's bm25; on PostgreSQL ts_rank reads no other document at all);
# operations KBs (ops-engineers write, vendors read those naming their work
# orders); retrieval-augmented chat through the gateway (the system message
# with numbered sources reaches the upstream, the client sees `sources`,
# streamed and not, usage recorded); and the audit trail of every change.
. "$(dirname "$0")/lib.sh"

GW=$(cd "$(dirname "$0")/../gateway" && pwd)
command -v node >/dev/null || fail "node is not installed (scripts/npm-deps.sh)"
[ -d "$GW/node_modules/openai" ] || fail "tests/gateway/node_modules is missing (scripts/npm-deps.sh)"

# mkuser VAR NAME: a service account NAME with a fresh token, stored in $VAR
mkuser() {
    gp user create --service "$2"
    assert_rc 0
    gp -o json token create --user "$2" --ttl 3600
    assert_rc 0
    printf -v "$1" '%s' "$(jq -r .token "$OUT_FILE")"
}
grant() {
    gp member grant "$@"
    assert_rc 0
}

# mkpdf FILE TEXT: a one-page PDF 1.4 showing TEXT (Helvetica), with a correct xref table
mkpdf() {
    local f=$1 text=$2 stream objs=() off i
    stream="BT /F1 12 Tf 72 720 Td ($text) Tj ET"
    objs[1]="<< /Type /Catalog /Pages 2 0 R >>"
    objs[2]="<< /Type /Pages /Kids [3 0 R] /Count 1 >>"
    objs[3]="<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>"
    objs[4]="<< /Length ${#stream} >>
stream
$stream
endstream"
    objs[5]="<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
    printf '%%PDF-1.4\n' >"$f"
    local offs=()
    for i in 1 2 3 4 5; do
        offs[i]=$(wc -c <"$f")
        printf '%d 0 obj\n%s\nendobj\n' "$i" "${objs[i]}" >>"$f"
    done
    off=$(wc -c <"$f")
    {
        printf 'xref\n0 6\n0000000000 65535 f \n'
        for i in 1 2 3 4 5; do printf '%010d 00000 n \n' "${offs[i]}"; done
        printf 'trailer\n<< /Size 6 /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n' "$off"
    } >>"$f"
}

# q TOKEN KBPATH QUERY [K]: POST …/query as TOKEN -> STATUS, BODY_FILE
q() {
    AUTH_HEADER="Authorization: Bearer $1" api POST "$2/query" "{\"query\":\"$3\",\"k\":${4:-5}}"
}
# as_api TOKEN METHOD PATH [BODY]
as_api() {
    local tok=$1
    shift
    AUTH_HEADER="Authorization: Bearer $tok" api "$@"
}

# ---------------------------------------------------------------- without a server
note "help"
run_cli kb --help
assert_rc 0
assert_file_contains "$OUT_FILE" "usage: gpupool kb"
for v in create list show update rm upload docs doc rm-doc query; do
    run_cli kb "$v" --help
    assert_rc 0
    assert_file_contains "$OUT_FILE" "usage: gpupool kb $v"
done
for v in bind unbind rag; do
    run_cli app "$v" --help
    assert_rc 0
    assert_file_contains "$OUT_FILE" "usage: gpupool app $v"
done
run_cli --server http://127.0.0.1:1 --token x kb list
assert_rc 2
assert_one_line_error "exactly one of --tenant T and --ops"
run_cli --server http://127.0.0.1:1 --token x kb create x --ops --project p
assert_rc 2

# ---------------------------------------------------------------- setup
start_server --endpoint-allow 127.0.0.0/8  # the fake upstream is on loopback
ADMIN=$TOKEN
grant admin ops-engineer
for t in red blue green; do
    gp tenant create $t
    assert_rc 0
    grant admin tenant-admin --tenant $t
done
for p in alpha beta; do
    gp project create $p --tenant red
    assert_rc 0
done
mkuser PADM padm
grant padm project-admin --tenant red --project alpha
mkuser PUSR pusr
grant pusr project-user --tenant red --project alpha
mkuser PBETA pbeta
grant pbeta project-user --tenant red --project beta
mkuser TVIEW tview
grant tview viewer --tenant red
mkuser BLUE bluead
grant bluead tenant-admin --tenant blue
R=(--tenant red)
RK=/api/v1/tenants/red/kbs

# ---------------------------------------------------------------- ingestion
note "ingestion of each format"
gp -o json kb create handbook "${R[@]}" --description "the staff handbook"
assert_rc 0
assert_json .scope tenant "$OUT_FILE"
assert_json .project null "$OUT_FILE"
gp kb create handbook "${R[@]}"
assert_denied 409
cat >"$E2E_TMP/pump.txt" <<'EOF'
Hydraulic pump maintenance. Check the hydraulic pump pressure every week: the pump
pressure gauge must read between 150 and 180 bar. A hydraulic pump that loses pressure
needs new seals.
EOF
cat >"$E2E_TMP/leave.md" <<'EOF'
# Annual leave

Staff take **annual leave** by asking their manager two weeks ahead.
EOF
cat >"$E2E_TMP/canteen.html" <<'EOF'
<html><head><title>Canteen</title><style>.menu{color:red}</style></head>
<body><h1>Canteen hours</h1><p>The canteen serves lunch from noon &amp; closes at two.</p>
<script>var pump = "hydraulic";</script></body></html>
EOF
mkpdf "$E2E_TMP/safety.pdf" "Forklift safety: wear a helmet near the loading dock"
gp -o json kb upload handbook "$E2E_TMP/pump.txt" "${R[@]}"
assert_rc 0
assert_json '.format + " " + (.chunks|tostring)' "text 1" "$OUT_FILE"
gp -o json kb upload handbook "$E2E_TMP/leave.md" "${R[@]}"
assert_rc 0
assert_json .format markdown "$OUT_FILE"
gp -o json kb upload handbook "$E2E_TMP/canteen.html" "${R[@]}"
assert_rc 0
assert_json .format html "$OUT_FILE"
gp -o json kb doc handbook canteen.html "${R[@]}"
assert_rc 0
assert_json .text "Canteen

Canteen hours

The canteen serves lunch from noon & closes at two." "$OUT_FILE"
HAVE_PDF=0
if command -v pdftotext >/dev/null; then
    HAVE_PDF=1
    gp -o json kb upload handbook "$E2E_TMP/safety.pdf" "${R[@]}"
    assert_rc 0
    assert_json .format pdf "$OUT_FILE"
    assert_json .bytes "$(wc -c <"$E2E_TMP/safety.pdf")" "$OUT_FILE"
    gp -o json kb doc handbook safety.pdf "${R[@]}"
    assert_contains "$(jout .text)" "Forklift safety: wear a helmet near the loading dock" "PDF text"
    gp -o json kb query handbook helmet forklift "${R[@]}"
    assert_rc 0
    assert_json '.items[0].document' safety.pdf "$OUT_FILE"
    # a file that says it is a PDF but is not one
    printf '%%PDF-1.4\nnot really\n' >"$E2E_TMP/broken.pdf"
    gp kb upload handbook "$E2E_TMP/broken.pdf" "${R[@]}"
    assert_denied 400
else
    note "pdftotext is not installed here: PDF ingestion answers 415 (checked instead)"
    gp kb upload handbook "$E2E_TMP/safety.pdf" "${R[@]}"
    assert_denied 415
fi
api POST $RK/handbook/documents '{"name":"x.docx","format":"docx","content":"x"}'
assert_status 415
assert_json .error.code unsupported_format
api POST $RK/handbook/documents '{"name":"x.pdf","format":"pdf","content":"%%% not base64"}'
assert_status 400
api POST $RK/handbook/documents '{"name":"blank.txt","content":"  \n "}'
assert_status 400
api POST $RK/handbook/documents '{"name":"../up","content":"x"}'
assert_status 400
head -c 1200000 /dev/zero | tr '\0' 'a' >"$E2E_TMP/big.txt"
gp kb upload handbook "$E2E_TMP/big.txt" "${R[@]}"
assert_denied 413
gp kb upload handbook "$E2E_TMP/pump.txt" "${R[@]}"
assert_denied 409

# ---------------------------------------------------------------- ranking
note "ranking"
for i in 1 2 3; do
    printf 'Note %d about the office printer and the pump room door.\n' "$i" >"$E2E_TMP/n$i.txt"
    gp kb upload handbook "$E2E_TMP/n$i.txt" "${R[@]}"
    assert_rc 0
done
gp -o json kb query handbook "How do I check the hydraulic pump pressure?" "${R[@]}"
assert_rc 0
assert_json '.items[0].document' pump.txt "$OUT_FILE"
assert_json '[.items[].score] | (. == (sort | reverse)) and (.[0] > 0)' true "$OUT_FILE"
assert_json '[.items[].document] | index("n1.txt") != null' true "$OUT_FILE"
gp -o json kb query handbook pump --k 2 "${R[@]}"
assert_json '.items | length' 2 "$OUT_FILE"
gp -o json kb query handbook pump --document n2.txt "${R[@]}"
assert_json '[.items[].document] | unique | join(",")' n2.txt "$OUT_FILE"
gp kb query handbook pump --document nosuch.txt "${R[@]}"
assert_denied 404
# FTS5 syntax in a query is only words
api POST $RK/handbook/query '{"query":"pump\" OR NEAR(* ^x) text: AND"}'
assert_status 200
api POST $RK/handbook/query '{"query":"\" * ( )"}'
assert_status 400
api POST $RK/handbook/query '{"query":"pump","k":0}'
assert_status 400
gp kb query handbook "no-such-word-anywhere" "${R[@]}"
assert_rc 0

# ---------------------------------------------------------------- chunks
note "chunk boundaries and overlap"
: >"$E2E_TMP/long.txt"
for i in $(seq 1 400); do printf 'Sentence %d mentions gearbox topic%d. ' "$i" "$i" >>"$E2E_TMP/long.txt"; done
printf '\n\nThe final paragraph names the zeppelin.\n' >>"$E2E_TMP/long.txt"
gp -o json kb upload handbook "$E2E_TMP/long.txt" "${R[@]}"
assert_rc 0
NCH=$(jout .chunks)
assert_match "$NCH" '^([3-9]|[1-9][0-9])$' "chunks of a long document"
gp -o json kb doc handbook long.txt "${R[@]}"
cp "$OUT_FILE" "$E2E_TMP/long.json"
assert_json '.spans | length' "$NCH" "$E2E_TMP/long.json"
assert_json '[.spans[] | .end - .start] | max <= 800' true "$E2E_TMP/long.json"
assert_json '.spans[0].start' 0 "$E2E_TMP/long.json"
assert_json '(.text | rtrimstr("\n") | length) == .spans[-1].end' true "$E2E_TMP/long.json"
# consecutive chunks overlap by at most 200 characters, and by more than nothing
assert_json '[range(1; .spans|length) as $i | .spans[$i].start < .spans[$i-1].end and
  .spans[$i].start >= .spans[$i-1].end - 200 and .spans[$i].start > .spans[$i-1].start] | all' \
    true "$E2E_TMP/long.json"
# every chunk starts at a word and ends after one
assert_json '. as $d | [.spans[] | $d.text[.start:.end] | test("^\\S") and test("\\S$")] | all' \
    true "$E2E_TMP/long.json"
# a hit's text is exactly the document's text at its offsets
api POST $RK/handbook/query '{"query":"topic200 zeppelin","k":5}'
assert_status 200
jq -s '.[0] as $d | .[1].items | map(select(.document == "long.txt")) |
  (length > 0) and all(.text == $d.text[.start:.end])' "$E2E_TMP/long.json" "$BODY_FILE" \
    >"$E2E_TMP/slice.out"
assert_eq "$(cat "$E2E_TMP/slice.out")" true "hit text equals the document text at its offsets"
# topic200 sits in one or two chunks (two when an overlap holds it)
assert_json '[.items[] | select(.document == "long.txt" and (.text | contains("topic200.")))] | length | . >= 1 and . <= 2' \
    true
assert_json '[.items[] | select(.text | contains("zeppelin"))][0].chunk' "$((NCH - 1))"

# ---------------------------------------------------------------- deletion
note "deletion removes results at once"
gp -o json kb query handbook zeppelin "${R[@]}"
assert_json '.items | length' 1 "$OUT_FILE"
gp kb rm-doc handbook long.txt "${R[@]}"
assert_rc 0
gp -o json kb query handbook zeppelin "${R[@]}"
assert_rc 0
assert_json '.items | length' 0 "$OUT_FILE"
gp kb rm-doc handbook long.txt "${R[@]}"
assert_denied 404
gp -o json kb show handbook "${R[@]}"
assert_rc 0
assert_json .documents "$((HAVE_PDF + 6))" "$OUT_FILE"

# ---------------------------------------------------------------- roles
note "roles inside the tenant"
gp -o json kb create alpha-notes "${R[@]}" --project alpha
assert_rc 0
assert_json '.scope + " " + .project' "project alpha" "$OUT_FILE"
printf 'Alpha team: the calibration rig lives in lab 4.\n' >"$E2E_TMP/rig.txt"
as "$PADM" -o json kb upload alpha-notes "$E2E_TMP/rig.txt" "${R[@]}"
assert_rc 0
as "$PADM" kb create padm-wide "${R[@]}"
assert_denied 403
as "$PADM" -o json kb create padm-notes "${R[@]}" --project alpha
assert_rc 0
as "$PADM" kb rm padm-notes "${R[@]}"
assert_rc 0
as "$PUSR" -o json kb query alpha-notes calibration "${R[@]}"
assert_rc 0
assert_json '.items[0].document' rig.txt "$OUT_FILE"
as "$PUSR" -o json kb query handbook pump "${R[@]}"
assert_rc 0
assert_json '.items[0].document' pump.txt "$OUT_FILE"
as "$PUSR" -o json kb list "${R[@]}"
assert_json '[.items[].name] | join(",")' "alpha-notes,handbook" "$OUT_FILE"
as "$PUSR" kb upload handbook "$E2E_TMP/rig.txt" "${R[@]}"
assert_denied 403
as "$PUSR" kb upload alpha-notes "$E2E_TMP/n1.txt" "${R[@]}"
assert_denied 403
as "$PUSR" kb rm alpha-notes "${R[@]}"
assert_denied 403
as "$TVIEW" -o json kb query alpha-notes calibration "${R[@]}"
assert_rc 0
as "$TVIEW" kb rm-doc handbook pump.txt "${R[@]}"
assert_denied 403
as "$PBETA" -o json kb list "${R[@]}"
assert_json '[.items[].name] | join(",")' "handbook" "$OUT_FILE"

note "cross-project and cross-tenant refusal of every KB endpoint"
# refused TOKEN WANT KBPATH: every KB endpoint on KBPATH (a KB) answers WANT
refused() {
    local tok=$1 want=$2 kb=$3 m p b
    while IFS='|' read -r m p b; do
        if [ -n "$b" ]; then as_api "$tok" "$m" "$kb$p" "$b"; else as_api "$tok" "$m" "$kb$p"; fi
        assert_status "$want"
        assert_json .error.code not_found
        if grep -qE 'calibration|rig\.txt|hydraulic|pump\.txt' "$BODY_FILE"; then
            fail "$m $kb$p leaked a document: $(head -c 300 "$BODY_FILE")"
        fi
    done <<'EOF'
GET|
PATCH||{"description":"x"}
DELETE|
GET|/documents
POST|/documents|{"name":"p.txt","content":"probe"}
GET|/documents/rig.txt
GET|/documents/pump.txt
DELETE|/documents/rig.txt
DELETE|/documents/pump.txt
POST|/query|{"query":"calibration pump"}
EOF
}
refused "$PBETA" 404 $RK/alpha-notes
refused "$BLUE" 404 $RK/alpha-notes
refused "$BLUE" 404 $RK/handbook
refused "$BLUE" 404 /api/v1/tenants/blue/kbs/handbook # the same name in its own tenant: none
as_api "$BLUE" GET $RK
assert_status 404
as_api "$BLUE" POST $RK '{"name":"intruder"}'
assert_status 404
as_api "$PBETA" POST $RK '{"name":"intruder","project":"alpha"}'
assert_status 404
as_api "$PBETA" POST $RK '{"name":"intruder"}'
assert_status 403
as_api "$BLUE" GET /api/v1/tenants/red/projects/alpha/apps/bot/rag
assert_status 404
# nothing changed in red
gp -o json kb show alpha-notes "${R[@]}"
assert_json '.documents' 1 "$OUT_FILE"
gp -o json kb list "${R[@]}"
assert_json '[.items[].name] | join(",")' "alpha-notes,handbook" "$OUT_FILE"

# ---------------------------------------------------------------- scores per tenant
note "scores come from each tenant's own documents"
ABOUT="Wind turbines turn wind into power; a turbine blade is long."
for t in red blue green; do
    gp kb create energy --tenant $t
    assert_rc 0
    printf '%s\n' "$ABOUT" >"$E2E_TMP/about.txt"
    gp kb upload energy "$E2E_TMP/about.txt" --tenant $t
    assert_rc 0
done
for i in 1 2 3; do # blue and green: the same filler
    printf 'Filler %d: the cafeteria sells soup and bread.\n' "$i" >"$E2E_TMP/f$i.txt"
    for t in blue green; do
        gp kb upload energy "$E2E_TMP/f$i.txt" --tenant $t
        assert_rc 0
    done
done
for i in $(seq 1 8); do # red: many documents with the words
    printf 'Turbine log %d: turbine %d inspected, wind speed normal.\n' "$i" "$i" >"$E2E_TMP/t$i.txt"
    gp kb upload energy "$E2E_TMP/t$i.txt" --tenant red
    assert_rc 0
done
score() { # score TENANT -> SCORE of about.txt for "wind turbine"
    gp -o json kb query energy wind turbine --k 20 --tenant "$1"
    assert_rc 0
    SCORE=$(jq -r '.items[] | select(.document == "about.txt") | .score' "$OUT_FILE")
    assert_match "$SCORE" '^[0-9]' "score in $1"
}
score blue
SB=$SCORE
assert_json '.items | length' 1 "$OUT_FILE"
score green
SG=$SCORE
score red
SR=$SCORE
assert_json '.items | length' 9 "$OUT_FILE"
assert_eq "$SB" "$SG" "blue's score equals a fresh tenant's with the same documents"
if [ -n "${GP_TEST_PG:-}" ]; then
    # PostgreSQL ranks with ts_rank, which reads the chunk and the query only: no other
    # document, of any tenant, moves a score
    assert_eq "$SR" "$SB" "ts_rank: red's many turbine documents change no score"
else
    # SQLite's bm25 weighs words by the tenant's own index
    assert_ne "$SR" "$SB" "red's many turbine documents change red's score only"
fi
# red uploading more does not move blue
gp kb upload energy "$E2E_TMP/n1.txt" --tenant red
score blue
assert_eq "$SCORE" "$SB" "blue's score after red grew"

# ---------------------------------------------------------------- ops KBs
note "operations KBs and vendors"
gp -o json jointoken create
JT=$(jout .token)
api_raw POST /api/v1/agent/register -H "Content-Type: application/json" --data-binary \
    "{\"join_token\":\"$JT\",\"node\":{\"name\":\"n1\",\"cpus\":8,\"memory_gib\":64,\"gpus\":[]}}"
assert_status 201
gp -o json workorder open --node n1 --title "pump failure"
assert_rc 0
WO=$(jout .id)
gp -o json workorder open --node n1 --title "other"
WO2=$(jout .id)
gp user create --service vend
assert_rc 0
gp -o json vendor grant vend --work-order "$WO" --ttl 600
assert_rc 0
gp -o json token create --user vend --ttl 600
VEND=$(jout .token)
gp -o json kb create runbooks --ops --work-order "$WO"
assert_rc 0
assert_json '.scope + " " + (.work_orders|join(","))' "ops $WO" "$OUT_FILE"
gp kb create secret-ops --ops --work-order "$WO2"
assert_rc 0
printf 'Pump repair runbook: isolate the hydraulic line before opening the pump.\n' >"$E2E_TMP/rb.txt"
gp kb upload runbooks "$E2E_TMP/rb.txt" --ops
assert_rc 0
gp kb upload secret-ops "$E2E_TMP/rb.txt" --ops
assert_rc 0
as "$VEND" -o json kb list --ops
assert_rc 0
assert_json '[.items[].name] | join(",")' runbooks "$OUT_FILE"
as "$VEND" -o json kb query runbooks hydraulic --ops
assert_rc 0
assert_json '.items[0].document' rb.txt "$OUT_FILE"
as "$VEND" kb upload runbooks "$E2E_TMP/n1.txt" --ops
assert_denied 403
as "$VEND" kb query secret-ops hydraulic --ops
assert_denied 404
as "$BLUE" kb list --ops
assert_denied 403
as "$BLUE" kb show runbooks --ops
assert_denied 404
as "$PADM" kb create x --ops
assert_denied 403
# ops documents do not reach tenants' results, nor tenant documents ops results
gp -o json kb query runbooks pump --ops
assert_json '[.items[].document] | join(",")' rb.txt "$OUT_FILE"
# moving the KB to another work order takes the vendor's access away
gp kb update runbooks --ops --work-order "$WO2"
assert_rc 0
as "$VEND" kb show runbooks --ops
assert_denied 404

# ---------------------------------------------------------------- RAG through the gateway
note "retrieval-augmented chat through the gateway"
node "$GW/upstream.mjs" --port 0 --name up1 --model llama >"$E2E_TMP/up.out" 2>&1 &
E2E_PIDS+=("$!")
for _ in $(seq 100); do
    UP=$(awk '/^listening/{print $2}' "$E2E_TMP/up.out")
    [ -n "$UP" ] && break
    sleep 0.05
done
[ -n "$UP" ] || fail "upstream did not start"
gp model create llama "${R[@]}"
assert_rc 0
gp endpoint add "${R[@]}" --model llama --url "http://127.0.0.1:$UP/v1"
assert_rc 0
RA=(--tenant red --project alpha)
gp app create bot "${RA[@]}"
assert_rc 0
gp app create plain "${RA[@]}"
assert_rc 0
gp kb create beta-notes "${R[@]}" --project beta
assert_rc 0
gp app bind bot "${RA[@]}" --model llama --kbs handbook,beta-notes
assert_denied 400
gp app bind bot "${RA[@]}" --model llama --kbs handbook,nosuch
assert_denied 404
as "$PUSR" app bind bot "${RA[@]}" --model llama --kbs handbook
assert_denied 403
gp -o json app bind bot "${RA[@]}" --model llama --kbs handbook,alpha-notes --k 3
assert_rc 0
assert_json '(.kbs|join(",")) + " " + (.k|tostring)' "handbook,alpha-notes 3" "$OUT_FILE"
gp -o json app rag bot "${RA[@]}"
assert_json '.items[0].model' llama "$OUT_FILE"
gp -o json key create rag-key "${RA[@]}" --app bot
assert_rc 0
KEY=$(jout .key)
KEY_ID=$(jout .id)
gp -o json key create plain-key "${RA[@]}" --app plain
PLAIN=$(jout .key)
QUESTION="How do I check the hydraulic pump pressure?"
# uplog: the chat requests the upstream received, in order, into uplog.json (the
# gateway's endpoint health probes, GET /models, may land between them at any time)
uplog() {
    curl -s "http://127.0.0.1:$UP/_log" | jq '[.[] | select(.method == "POST")]' >"$E2E_TMP/uplog.json"
}
curl -s -X DELETE "http://127.0.0.1:$UP/_log" >/dev/null
timeout 60 node "$GW/client.mjs" "$URL/v1" "$KEY" chat-sources "{\"model\":\"llama\",\"content\":\"$QUESTION\"}" >"$E2E_TMP/rag.json"
assert_json .ok true "$E2E_TMP/rag.json"
assert_json .content "echo:$QUESTION" "$E2E_TMP/rag.json"
assert_json '.sources[0].document' pump.txt "$E2E_TMP/rag.json"
assert_json '.sources | length <= 3 and length >= 1' true "$E2E_TMP/rag.json"
assert_json '.sources[0] | (.kb == "handbook") and (.chunk == 0) and (.score > 0) and has("start") and has("end")' true "$E2E_TMP/rag.json"
uplog
assert_json '.[-1].body.messages | length' 2 "$E2E_TMP/uplog.json"
assert_json '.[-1].body.messages[0].role' system "$E2E_TMP/uplog.json"
assert_json '.[-1].body.messages[0].content | contains("[1] handbook / pump.txt (chunk 0)") and contains("150 and 180 bar")' true "$E2E_TMP/uplog.json"
assert_json '.[-1].body.messages[1].content' "$QUESTION" "$E2E_TMP/uplog.json"
# streamed: the sources ride on the first chunk only
timeout 60 node "$GW/client.mjs" "$URL/v1" "$KEY" chat-stream-sources "{\"model\":\"llama\",\"content\":\"calibration rig\"}" >"$E2E_TMP/rags.json"
assert_json .ok true "$E2E_TMP/rags.json"
assert_json .content "echo:calibration rig" "$E2E_TMP/rags.json"
assert_json '.first_sources[0].document' rig.txt "$E2E_TMP/rags.json"
assert_json .chunks_with_sources 1 "$E2E_TMP/rags.json"
# nothing found: no system message, empty sources
timeout 60 node "$GW/client.mjs" "$URL/v1" "$KEY" chat-sources '{"model":"llama","content":"xylophone"}' >"$E2E_TMP/none.json"
assert_json '.sources | length' 0 "$E2E_TMP/none.json"
uplog
assert_json '.[-1].body.messages | length' 1 "$E2E_TMP/uplog.json"
# a key of an application without a binding: passed through as it came
timeout 60 node "$GW/client.mjs" "$URL/v1" "$PLAIN" chat-sources "{\"model\":\"llama\",\"content\":\"$QUESTION\"}" >"$E2E_TMP/plain.json"
assert_json .sources null "$E2E_TMP/plain.json"
uplog
assert_json '.[-1].body.messages | length' 1 "$E2E_TMP/uplog.json"
# metered like any call: the record's prompt counts the retrieved context
poll 5 bash -c "'$GPUPOOL_BIN' --server '$URL' --token '$ADMIN' -o json usage records --tenant red --project alpha --key '$KEY_ID' | jq -e '.items | length == 3' >/dev/null" ||
    fail "three usage records for the RAG key"
_pass
gp -o json usage records --tenant red --project alpha --key "$KEY_ID"
assert_json '[.items[] | select(.stream == false)] | map(.prompt_tokens) | max > 40' true "$OUT_FILE"
assert_json '[.items[].app] | unique | join(",")' bot "$OUT_FILE"
# deleting the KB takes it out of the binding; unbinding ends retrieval
gp app unbind bot "${RA[@]}" --model llama
assert_rc 0
gp app unbind bot "${RA[@]}" --model llama
assert_denied 404
timeout 60 node "$GW/client.mjs" "$URL/v1" "$KEY" chat-sources "{\"model\":\"llama\",\"content\":\"$QUESTION\"}" >"$E2E_TMP/unbound.json"
assert_json .sources null "$E2E_TMP/unbound.json"

# ---------------------------------------------------------------- audit
note "every change is audited"
gp kb update handbook "${R[@]}" --description "v2"
assert_rc 0
gp kb rm beta-notes "${R[@]}"
assert_rc 0
for a in kb.create kb.update kb.delete kb.document.upload kb.document.delete app.rag.set app.rag.delete; do
    gp -o json audit list --action "$a"
    assert_rc 0
    assert_match "$(jout '[.items[] | select(.result == "ok")] | length')" '^[1-9]' "audit events $a"
done
gp -o json audit list --action kb.document.delete
assert_json '[.items[] | select(.result == "ok")][0] | .target.type + " " + .target.id + " " + .tenant' \
    "kb-document handbook/long.txt red" "$OUT_FILE"
gp -o json audit list --action kb.create --target runbooks
assert_json '.items[0].summary | .scope + " " + (.work_orders | join(","))' "ops $WO" "$OUT_FILE"
gp -o json audit list --action kb.update --target runbooks
assert_json '.items[0].summary | (.from.work_orders | join(",")) + ">" + (.to.work_orders | join(","))' \
    "$WO>$WO2" "$OUT_FILE"
gp -o json audit list --action app.rag.set
assert_json '[.items[] | select(.result == "ok")][0].summary | .app + " " + .model + " " + (.kbs | join(","))' \
    "bot llama handbook,alpha-notes" "$OUT_FILE"
gp -o json audit list --action kb.document.upload --target handbook/pump.txt
assert_json '[.items[] | select(.result == "ok")][0].summary | .format + " " + (.chunks | tostring)' "text 1" "$OUT_FILE"
gp -o json audit list --action kb.document.upload
assert_json '[.items[] | select(.result == "denied")] | length > 0' true "$OUT_FILE"

stop_server
done_testing
