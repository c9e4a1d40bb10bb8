#!/usr/bin/env bash
# gen-man.sh - write gpupool(1) from the binary's own help: the command table of
# `gpupool --help` and each command's `gpupool CMD --help`, so the manual page says
# exactly what the CLI does (CMake runs it at build time; the .deb installs it gzipped).
#
#   scripts/gen-man.sh BUILD/gpupool OUT.1
set -euo pipefail
bin=$1
out=$2
version=$("$bin" --version | awk '{print $2}')

# roff-safe text: backslashes doubled, a leading . or ' escaped
esc() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }

cmds=$("$bin" --help | sed -n '/^commands:/,/^$/p' | awk 'NR > 1 && NF {print $1}')
{
    printf '.TH GPUPOOL 1 "" "gpupool %s" "User Commands"\n' "$version"
    printf '.SH NAME\ngpupool \\- multi-tenant GPU cluster manager: server, node agent and CLI\n'
    printf '.SH SYNOPSIS\n.B gpupool\n[\\fIglobal options\\fR] \\fIcommand\\fR [\\fIverb\\fR] [\\fIarguments\\fR]\n'
    printf '.SH DESCRIPTION\n'
    printf 'Many teams (tenants) share one GPU cluster: quotas, guaranteed shares, a scheduler,\n'
    printf 'workload identities, an OpenAI-compatible gateway, metering and a hash-chained audit\n'
    printf 'trail, in one binary. The same binary runs the control plane (\\fBgpupool server\\fR),\n'
    printf 'the node agent (\\fBgpupool agent\\fR) and every client command below.\n'
    printf '.SH GLOBAL OPTIONS\n.nf\n'
    "$bin" --help | sed -n '/^options:/,$p' | sed 1d | esc
    printf '.fi\n.SH COMMANDS\n'
    for c in $cmds; do
        printf '.SS %s\n.nf\n' "$c"
        "$bin" "$c" --help 2>&1 | esc
        printf '.fi\n'
    done
    printf '.SH ENVIRONMENT\n.TP\n.B GPUPOOL_SERVER\nthe API address (as \\fB\\-\\-server\\fR)\n'
    printf '.TP\n.B GPUPOOL_TOKEN\\fR, \\fBGPUPOOL_TOKEN_FILE\nthe bearer token, or a file holding it\n'
    printf '.TP\n.B GPUPOOL_TENANT\\fR, \\fBGPUPOOL_PROJECT\nthe context for one shell (see \\fBgpupool context\\fR)\n'
    printf '.TP\n.B GPUPOOL_CA\na PEM CA bundle to trust for an https server\n'
    printf '.SH FILES\n.TP\n.I ~/.config/gpupool/config\n'
    printf 'client settings: \\fBserver =\\fR, \\fBtoken =\\fR, \\fBtoken_file =\\fR, and the context\n'
    printf '(\\fBtenant =\\fR, \\fBproject =\\fR)\n'
    printf '.TP\n.I /etc/gpupool/server.conf\\fR, \\fI/etc/gpupool/agent.conf\n'
    printf 'the packaged services'"'"' settings\n'
    printf '.SH EXIT STATUS\n0 success; 1 the operation failed; 2 a usage error.\n'
    printf '.SH SEE ALSO\nThe guides in \\fI/usr/share/doc/gpupool/\\fR (cli.md, operations.md, scheduling.md).\n'
} >"$out"
