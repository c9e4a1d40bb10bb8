#!/usr/bin/env bash
# shellcheck disable=SC2119,SC2317  # start_server takes optional flags; helpers run via xargs
#
# test_cli.sh - the command line client against a real server: exit codes
# (0 ok, 1 operation failed, 2 usage error), one-line "gpupool: ..." errors,
# --help at every level, where the server and token come from (flags, env,
# config file), table and JSON output.
#
#   GPUPOOL_BIN=/path/to/gpupool bash tests/e2e/test_cli.sh
. "$(dirname "$0")/lib.sh"

# assert_usage_error ARGS...: exit 2, one "gpupool: " line on stderr, nothing on stdout
assert_usage_error() {
    run_cli "$@"
    assert_rc 2
    assert_one_line_error
    assert_eq "$(wc -c <"$OUT_FILE")" 0 "stdout of 'gpupool $*'"
}

# assert_help ARGS...: exit 0, usage text on stdout, nothing on stderr
assert_help() {
    run_cli "$@"
    assert_rc 0
    assert_file_contains "$OUT_FILE" "usage: gpupool"
    assert_eq "$(wc -c <"$ERR_FILE")" 0 "stderr of 'gpupool $*'"
}

# ---------------------------------------------------------------- without a server
note "help and usage errors"
assert_help --help
assert_file_contains "$OUT_FILE" "tenant"
assert_file_contains "$OUT_FILE" "audit"
assert_help -h
for noun in tenant project audit server whoami; do
    assert_help "$noun" --help
done
assert_help tenant help
for verb in create list show; do
    assert_help tenant "$verb" --help
    assert_file_contains "$OUT_FILE" "tenant $verb"
    assert_help project "$verb" --help
    assert_file_contains "$OUT_FILE" "project $verb"
done
assert_help audit list --help
assert_help audit verify --help
assert_help tenant create -h
# --help wins over a missing argument and needs no server
assert_help --server http://127.0.0.1:1 tenant create --help

run_cli --version
assert_rc 0
assert_match "$(cat "$OUT_FILE")" '^gpupool [0-9]+\.[0-9]+\.[0-9]+'

# no command at all: usage on stderr, exit 2
run_cli
assert_rc 2
assert_file_contains "$ERR_FILE" "usage: gpupool"
assert_eq "$(wc -c <"$OUT_FILE")" 0 "stdout of bare gpupool"
# a noun without a verb
run_cli tenant
assert_rc 2
assert_file_contains "$ERR_FILE" "usage: gpupool tenant"

assert_usage_error frobnicate
assert_file_contains "$ERR_FILE" "frobnicate"
assert_usage_error tenant frobnicate
assert_file_contains "$ERR_FILE" "frobnicate"
assert_usage_error --bogus tenant list
assert_file_contains "$ERR_FILE" "--bogus"
assert_usage_error tenant create --bogus x
assert_file_contains "$ERR_FILE" "--bogus"
assert_usage_error tenant list --bogus
assert_usage_error -o xml tenant list
assert_file_contains "$ERR_FILE" "xml"
assert_usage_error --output=xml tenant list
assert_usage_error -o=xml tenant list
assert_usage_error --server
assert_usage_error --token
assert_usage_error tenant create
assert_usage_error tenant create a b
assert_usage_error tenant create x --display-name
assert_usage_error tenant show
assert_usage_error tenant list extra
assert_usage_error project create p1
assert_file_contains "$ERR_FILE" "--tenant"
assert_usage_error project list
assert_usage_error project show --tenant t
assert_usage_error project list --tenant t --class production
assert_usage_error audit verify extra
assert_usage_error audit list extra
assert_usage_error whoami extra
assert_usage_error server --bogus
assert_usage_error server --threads zero

# unreachable server: an operation failure (1), not a usage error
run_cli --server http://127.0.0.1:1 --token x tenant list
assert_rc 1
assert_one_line_error "127.0.0.1:1"
run_cli --token-file "$E2E_TMP/no-such-file" tenant list
assert_match "$RC" '^[12]$' "exit code for an unreadable --token-file"
assert_one_line_error "no-such-file"

# ---------------------------------------------------------------- with a server
start_server
note "server at $URL"

gp whoami
assert_rc 0
assert_eq "$(head -n 1 "$OUT_FILE")" "admin (user)" "whoami first line"
assert_match "$(grep platform-admin "$OUT_FILE")" '^ +platform-admin +global' "whoami role line"
assert_file_contains "$OUT_FILE" "security-admin"

gp -o json whoami
assert_rc 0
assert_json .name admin "$OUT_FILE"
assert_json '[.roles[].role] | index("platform-admin") != null' true "$OUT_FILE"

gp tenant list
assert_rc 0
assert_eq "$(head -n 1 "$OUT_FILE" | tr -s ' ')" "NAME DISPLAY_NAME CREATED_AT" "empty table header"
assert_eq "$(wc -l <"$OUT_FILE")" 1 "lines of an empty table"

gp tenant create --display-name "Research Department" research
assert_rc 0
assert_match "$(grep -E '^name ' "$OUT_FILE")" '^name +research$' "tenant create output"
gp tenant create --display-name "Vision Lab" vision
assert_rc 0
gp -o json tenant create infra
assert_rc 0
assert_json .name infra "$OUT_FILE"
assert_json '.id | length > 0' true "$OUT_FILE"
gp --output json tenant show infra
assert_rc 0
assert_json .name infra "$OUT_FILE"

# API errors: exit 1, one line with the server's message, nothing on stdout
gp tenant create research
assert_rc 1
assert_one_line_error "already exists"
assert_eq "$(wc -c <"$OUT_FILE")" 0 "stdout of a failed create"
gp tenant create "Bad Name"
assert_rc 1
assert_one_line_error "invalid_argument"
gp tenant show nope
assert_rc 1
assert_one_line_error "not found"
gp tenant show "a/b"
assert_rc 1
assert_one_line_error
gp project create --tenant nope p1
assert_rc 1
assert_one_line_error "not_found"
gp audit list --limit 0
assert_rc 1
assert_one_line_error "limit"

gp tenant list
assert_rc 0
assert_eq "$(wc -l <"$OUT_FILE")" 4 "table lines: header + 3 tenants"
assert_eq "$(awk 'NR > 1 {print $1}' "$OUT_FILE" | tr '\n' ' ')" "infra research vision " "tenant names column"
assert_match "$(grep '^research ' "$OUT_FILE")" '^research +Research Department +[0-9]{4}-[0-9]{2}-[0-9]{2}T' "research row"
assert_match "$(grep '^infra ' "$OUT_FILE")" '^infra +(- +)?[0-9]{4}-[0-9]{2}-[0-9]{2}T' "row with no display name"

gp -o json tenant list
assert_rc 0
assert_json '[.items[].name] | join(",")' "infra,research,vision" "$OUT_FILE"
assert_json '.next' null "$OUT_FILE"

# projects
gp project create --tenant research --class production vision-b
assert_rc 0
gp project create --tenant research fine-tune-a
assert_rc 0
gp project create --tenant research --class gold x
assert_rc 1
assert_one_line_error
gp project list --tenant research
assert_rc 0
assert_file_contains "$OUT_FILE" "CLASS"
assert_match "$(grep '^vision-b ' "$OUT_FILE")" '^vision-b +production +research ' "project row"
assert_match "$(grep '^fine-tune-a ' "$OUT_FILE")" '^fine-tune-a +development +research ' "project row"
gp -o json project show --tenant research vision-b
assert_rc 0
assert_json .class production "$OUT_FILE"
assert_json .tenant research "$OUT_FILE"
gp project show --tenant research nope
assert_rc 1
assert_one_line_error "not found"

# audit
gp audit list
assert_rc 0
assert_file_contains "$OUT_FILE" "SEQ"
assert_file_contains "$OUT_FILE" "tenant.create"
assert_file_contains "$OUT_FILE" "user.bootstrap"
gp -o json audit list --action tenant.create --result ok
assert_rc 0
assert_json '[.items[].target.id] | join(",")' "research,vision,infra" "$OUT_FILE"
gp -o json audit list --tenant research --limit 2
assert_rc 0
assert_json '.items | length' 2 "$OUT_FILE"
assert_json '[.items[].tenant] | unique | join(",")' research "$OUT_FILE"
NEXT=$(jq -r .next "$OUT_FILE")
gp -o json audit list --tenant research --after "$NEXT"
assert_rc 0
assert_json ".items[0].seq > $NEXT" true "$OUT_FILE"
gp audit verify
assert_rc 0
assert_match "$(head -n 1 "$OUT_FILE")" '^audit chain OK: [0-9]+ records, head [0-9a-f]{64}$' "verify output"
gp -o json audit verify
assert_rc 0
assert_json .ok true "$OUT_FILE"

# ---------------------------------------------------------------- credentials
note "server and token from flags, environment and config file"
# no token at all
run_cli --server "$URL" tenant list
assert_rc 1
assert_one_line_error "unauthenticated"
# a bad token; the message never echoes it
run_cli --server "$URL" --token "sekrit-not-a-token" tenant list
assert_rc 1
assert_one_line_error "unauthenticated"
assert_file_lacks "$ERR_FILE" "sekrit-not-a-token"

# environment
GPUPOOL_SERVER=$URL GPUPOOL_TOKEN=$TOKEN run_cli whoami
assert_rc 0
assert_file_contains "$OUT_FILE" "admin"
echo "$TOKEN" >"$E2E_TMP/token"
chmod 600 "$E2E_TMP/token"
GPUPOOL_SERVER=$URL GPUPOOL_TOKEN_FILE=$E2E_TMP/token run_cli whoami
assert_rc 0
assert_file_contains "$OUT_FILE" "admin"
run_cli --server "$URL" --token-file "$E2E_TMP/token" whoami
assert_rc 0
run_cli --server "$URL" --token-file "$DATA/admin.token" whoami
assert_rc 0
# flags win over the environment
GPUPOOL_SERVER=http://127.0.0.1:1 GPUPOOL_TOKEN=$TOKEN run_cli --server "$URL" whoami
assert_rc 0
GPUPOOL_SERVER=$URL GPUPOOL_TOKEN=$TOKEN run_cli --token bad-token whoami
assert_rc 1
assert_one_line_error "unauthenticated"
GPUPOOL_SERVER=$URL GPUPOOL_TOKEN=bad-token run_cli whoami
assert_rc 1

# config file in $XDG_CONFIG_HOME/gpupool/config
XDG=$E2E_TMP/xdg
mkdir -p "$XDG/gpupool"
printf '# gpupool client settings\n\nserver = %s\ntoken = %s\n' "$URL" "$TOKEN" >"$XDG/gpupool/config"
XDG_CONFIG_HOME=$XDG run_cli whoami
assert_rc 0
assert_file_contains "$OUT_FILE" "admin (user)"
XDG_CONFIG_HOME=$XDG run_cli tenant list
assert_rc 0
assert_file_contains "$OUT_FILE" "research"
# the environment wins over the config file
XDG_CONFIG_HOME=$XDG GPUPOOL_TOKEN=bad-token run_cli whoami
assert_rc 1
XDG_CONFIG_HOME=$XDG GPUPOOL_SERVER=http://127.0.0.1:1 run_cli whoami
assert_rc 1
assert_one_line_error "127.0.0.1:1"
# token_file in the config file
printf 'server=%s\ntoken_file=%s\n' "$URL" "$E2E_TMP/token" >"$XDG/gpupool/config"
XDG_CONFIG_HOME=$XDG run_cli whoami
assert_rc 0
assert_file_contains "$OUT_FILE" "admin"
# without a token, the server from the config is still used (401, not unreachable)
printf 'server = %s\n' "$URL" >"$XDG/gpupool/config"
XDG_CONFIG_HOME=$XDG run_cli tenant list
assert_rc 1
assert_one_line_error "unauthenticated"
XDG_CONFIG_HOME=$XDG GPUPOOL_TOKEN=$TOKEN run_cli tenant list
assert_rc 0
# ~/.config/gpupool/config when XDG_CONFIG_HOME is unset
mkdir -p "$E2E_TMP/home/.config/gpupool"
printf 'server = %s\ntoken = %s\n' "$URL" "$TOKEN" >"$E2E_TMP/home/.config/gpupool/config"
(unset XDG_CONFIG_HOME; HOME=$E2E_TMP/home run_cli whoami; echo "$RC" >"$E2E_TMP/rc")
RC=$(cat "$E2E_TMP/rc")
assert_rc 0
# the server URL may end with a slash
run_cli --server "$URL/" --token "$TOKEN" whoami
assert_rc 0

# ---------------------------------------------------------------- known bugs last
# (these failed when written; they stay at the end so the checks above keep running)

# Options after the positional NAME, exactly as the usage texts show them
# ("create NAME --tenant T", "create NAME [--display-name TEXT]").
note "verb options after the NAME"
gp tenant create ml-lab --display-name "ML Lab"
assert_rc 0
assert_match "$(grep -E '^display_name ' "$OUT_FILE")" '^display_name +ML Lab$' "display name given after NAME"
gp project create after-name --tenant research --class research
assert_rc 0
gp -o json project show after-name --tenant research
assert_rc 0
assert_json .class research "$OUT_FILE"
gp project list --tenant research
assert_rc 0
assert_file_contains "$OUT_FILE" "after-name"

# "key = value" lines in the client config: whitespace around the value is not
# part of it (the server's --config reader already strips it)
note "client config with trailing whitespace"
printf 'server = %s \t\n' "$URL" >"$XDG/gpupool/config"
XDG_CONFIG_HOME=$XDG run_cli --token "$TOKEN" whoami
assert_rc 0
printf 'server = %s\ntoken = %s \t\r\n' "$URL" "$TOKEN" >"$XDG/gpupool/config"
XDG_CONFIG_HOME=$XDG run_cli whoami
assert_rc 0

stop_server
# the same commands once the server is gone: exit 1, one line
gp tenant list
assert_rc 1
assert_one_line_error "cannot reach"
done_testing
