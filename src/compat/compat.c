/*
 * compat.c - accelerator compatibility rules: vendors, driver minimums per vendor, runtime
 * stacks and version comparison (see compat.h).  Pure.
 */
#include "compat.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const vendor_names[CP_NVENDORS] = {"nvidia", "amd", "intel"};
static const char *const runtime_names[CP_NRUNTIMES] = {"cuda", "rocm", "synapse"};

int cp_vendor_parse(const char *name) {
    for (int i = 0; name && i < CP_NVENDORS; i++)
        if (!strcmp(name, vendor_names[i])) return i;
    return -1;
}

const char *cp_vendor_name(int v) { return v >= 0 && v < CP_NVENDORS ? vendor_names[v] : "?"; }

int cp_runtime_parse(const char *name) {
    for (int i = 0; name && i < CP_NRUNTIMES; i++)
        if (!strcmp(name, runtime_names[i])) return i;
    return -1;
}

const char *cp_runtime_name(int r) { return r >= 0 && r < CP_NRUNTIMES ? runtime_names[r] : "?"; }

int cp_vendor_runtime(int vendor) { return vendor >= 0 && vendor < CP_NVENDORS ? vendor : -1; }

/* Split a version into parts; the number of parts, or -1 when it is not a version. */
static int parts(const char *v, long long out[CP_VER_PARTS]) {
    if (!v || !*v || strlen(v) >= CP_VER_MAX) return -1;
    int np = 0;
    const char *p = v;
    for (;;) {
        int digits = 0;
        long long x = 0;
        while (isdigit((unsigned char)*p)) {
            if (++digits > 9) return -1;
            x = x * 10 + (*p - '0');
            p++;
        }
        if (!digits || np == CP_VER_PARTS) return -1;
        out[np++] = x;
        if (!*p) return np;
        if (*p != '.') return -1;
        p++;
    }
}

int cp_version_valid(const char *v) {
    long long p[CP_VER_PARTS];
    return parts(v, p) > 0;
}

int cp_version_cmp(const char *a, const char *b) {
    long long pa[CP_VER_PARTS] = {0}, pb[CP_VER_PARTS] = {0};
    int na = parts(a, pa), nb = parts(b, pb);
    if (na < 0 || nb < 0) return (na >= 0) - (nb >= 0);
    for (int i = na; i < CP_VER_PARTS; i++) pa[i] = 0;
    for (int i = nb; i < CP_VER_PARTS; i++) pb[i] = 0;
    for (int i = 0; i < CP_VER_PARTS; i++)
        if (pa[i] != pb[i]) return pa[i] < pb[i] ? -1 : 1;
    return 0;
}

int cp_stack_parse(json_t *obj, cp_stack *out, char *why, size_t n) {
    memset(out, 0, sizeof *out);
    if (!obj || json_is_null(obj)) return 0;
    if (!json_is_object(obj) || json_object_size(obj) > CP_NRUNTIMES) {
        snprintf(why, n, "stack must be an object of runtime -> version (cuda, rocm, synapse)");
        return -1;
    }
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        int r = cp_runtime_parse(k);
        if (r < 0) {
            snprintf(why, n, "stack: unknown runtime '%.32s' (cuda, rocm or synapse)", k);
            return -1;
        }
        if (!json_is_string(v) || !cp_version_valid(json_string_value(v))) {
            snprintf(why, n, "stack: %s must be a dotted version like \"12.4\"", k);
            return -1;
        }
        snprintf(out->ver[r], CP_VER_MAX, "%s", json_string_value(v));
    }
    return 0;
}

json_t *cp_stack_json(const cp_stack *s) {
    json_t *o = json_object();
    for (int r = 0; r < CP_NRUNTIMES; r++)
        if (s->ver[r][0]) json_object_set_new(o, runtime_names[r], json_string(s->ver[r]));
    return o;
}

int cp_req_parse(const char *text, cp_req *out, char *why, size_t n) {
    memset(out, 0, sizeof *out);
    out->runtime = -1;
    if (!text || !*text) return 0;
    if (strlen(text) > 64) {
        snprintf(why, n, "stack must be <runtime>>=<version>, e.g. rocm>=6.1");
        return -1;
    }
    const char *ge = strstr(text, ">=");
    char rt[16] = "", ver[CP_VER_MAX + 8] = "";
    if (ge) {
        const char *a = text, *e = ge;
        while (a < e && *a == ' ') a++;
        while (e > a && e[-1] == ' ') e--;
        if ((size_t)(e - a) < sizeof rt) snprintf(rt, sizeof rt, "%.*s", (int)(e - a), a);
        const char *b = ge + 2;
        while (*b == ' ') b++;
        snprintf(ver, sizeof ver, "%s", b);
        size_t l = strlen(ver);
        while (l && ver[l - 1] == ' ') ver[--l] = '\0';
    }
    int r = cp_runtime_parse(rt);
    if (!ge || r < 0 || !cp_version_valid(ver)) {
        snprintf(why, n, "stack must be <runtime>>=<version> with runtime cuda, rocm or synapse, "
                         "e.g. rocm>=6.1");
        return -1;
    }
    out->runtime = r;
    memcpy(out->min, ver, strlen(ver) + 1); /* a valid version is shorter than CP_VER_MAX */
    return 0;
}

void cp_req_format(const cp_req *r, char *buf, size_t n) {
    if (!r || r->runtime < 0) snprintf(buf, n, "%s", "");
    else snprintf(buf, n, "%s>=%s", runtime_names[r->runtime], r->min);
}

int cp_rules_parse(json_t *vendors, json_t *min_drivers, json_t *stack, cp_rules *out,
                   char *why, size_t n) {
    memset(out, 0, sizeof *out);
    if (vendors && !json_is_null(vendors)) {
        size_t i;
        json_t *v;
        if (!json_is_array(vendors) || json_array_size(vendors) > CP_NVENDORS) {
            snprintf(why, n, "vendors must be an array of nvidia, amd, intel");
            return -1;
        }
        json_array_foreach(vendors, i, v) {
            int x = cp_vendor_parse(json_string_value(v));
            if (x < 0) {
                snprintf(why, n, "vendors: unknown vendor '%.32s' (nvidia, amd or intel)",
                         json_is_string(v) ? json_string_value(v) : "?");
                return -1;
            }
            out->vendors |= 1u << x;
        }
    }
    if (min_drivers && !json_is_null(min_drivers)) {
        const char *k;
        json_t *v;
        if (!json_is_object(min_drivers) || json_object_size(min_drivers) > CP_NVENDORS) {
            snprintf(why, n, "min_drivers must be an object of vendor -> version");
            return -1;
        }
        json_object_foreach(min_drivers, k, v) {
            int x = cp_vendor_parse(k);
            if (x < 0) {
                snprintf(why, n, "min_drivers: unknown vendor '%.32s' (nvidia, amd or intel)", k);
                return -1;
            }
            if (!json_is_string(v) ||
                (json_string_length(v) && !cp_version_valid(json_string_value(v)))) {
                snprintf(why, n, "min_drivers: %s must be a dotted version like \"535.104\"", k);
                return -1;
            }
            if (json_string_length(v) && out->vendors && !(out->vendors & (1u << x))) {
                snprintf(why, n, "min_drivers names %s, which the class's vendors do not accept",
                         k);
                return -1;
            }
            snprintf(out->min_driver[x], CP_VER_MAX, "%s", json_string_value(v));
        }
    }
    if (cp_stack_parse(stack, &out->stack, why, n)) return -1;
    return 0;
}

static int stack_any(const cp_stack *s) {
    for (int r = 0; r < CP_NRUNTIMES; r++)
        if (s->ver[r][0]) return 1;
    return 0;
}

static int offers(const cp_stack *have, int r, const char *min) {
    return have && have->ver[r][0] && cp_version_cmp(have->ver[r], min) >= 0;
}

static int vendor_ok(const cp_rules *r, const cp_card *c) {
    return !r->vendors || (c->vendor >= 0 && c->vendor < CP_NVENDORS && (r->vendors & (1u << c->vendor)));
}

static int driver_ok(const cp_rules *r, const cp_card *c) {
    if (c->vendor < 0 || c->vendor >= CP_NVENDORS || !r->min_driver[c->vendor][0]) return 1;
    return c->driver && cp_version_cmp(c->driver, r->min_driver[c->vendor]) >= 0;
}

static int class_stack_ok(const cp_rules *r, const cp_card *c) {
    if (!stack_any(&r->stack)) return 1;
    for (int k = 0; k < CP_NRUNTIMES; k++)
        if (r->stack.ver[k][0] && offers(c->stack, k, r->stack.ver[k])) return 1;
    return 0;
}

static int job_stack_ok(const cp_req *q, const cp_card *c) {
    return !q || q->runtime < 0 || offers(c->stack, q->runtime, q->min);
}

int cp_card_check(const cp_rules *r, const cp_req *q, const cp_card *c) {
    if (r && !vendor_ok(r, c)) return CP_BAD_VENDOR;
    if (r && !driver_ok(r, c)) return CP_BAD_DRIVER;
    if (r && !class_stack_ok(r, c)) return CP_BAD_CLASS_STACK;
    if (!job_stack_ok(q, c)) return CP_BAD_JOB_STACK;
    return CP_OK;
}

/* Append to buf (bounded). */
static void add(char *buf, size_t len, const char *fmt, const char *a, const char *b) {
    size_t l = strlen(buf);
    if (l + 1 < len) snprintf(buf + l, len - l, fmt, a, b);
}

/* The vendors of a bit set, "amd or intel". */
static void vendor_list(unsigned bits, const char *sep, char *buf, size_t len) {
    buf[0] = '\0';
    for (int v = 0; v < CP_NVENDORS; v++)
        if (bits & (1u << v)) add(buf, len, "%s%s", buf[0] ? sep : "", vendor_names[v]);
}

int cp_why_none(const cp_rules *r, const cp_req *q, const cp_card *cards, size_t n, char *why,
                 size_t len) {
    static const cp_rules none;
    if (!r) r = &none;
    if (q && q->runtime < 0) q = NULL;
    if (!n) {
        snprintf(why, len, "no card of the class's models");
        return 1;
    }
    /* 0. the job's stack: when no card at all offers it, that is the reason; else the class's
     * rules are judged on the cards that do (the others could never run the job) */
    size_t pass = 0;
    for (size_t i = 0; i < n; i++) pass += job_stack_ok(q, &cards[i]);
    if (!pass) {
        const char *bv = NULL;
        int bvend = -1;
        for (size_t i = 0; i < n; i++) {
            const cp_card *c = &cards[i];
            if (!c->stack || !c->stack->ver[q->runtime][0]) continue;
            if (!bv || cp_version_cmp(c->stack->ver[q->runtime], bv) > 0) {
                bv = c->stack->ver[q->runtime];
                bvend = c->vendor;
            }
        }
        if (bv)
            snprintf(why, len, "no card offers %s >= %s (newest: %s on %s)",
                     runtime_names[q->runtime], q->min, bv, cp_vendor_name(bvend));
        else
            snprintf(why, len, "no card offers %s >= %s (none offers %s)",
                     runtime_names[q->runtime], q->min, runtime_names[q->runtime]);
        return 1;
    }
#define CARD_IN(c) job_stack_ok(q, (c))
    /* 1. vendors */
    unsigned have = 0;
    pass = 0;
    for (size_t i = 0; i < n; i++) {
        if (!CARD_IN(&cards[i])) continue;
        if (cards[i].vendor >= 0 && cards[i].vendor < CP_NVENDORS) have |= 1u << cards[i].vendor;
        pass += vendor_ok(r, &cards[i]);
    }
    if (!pass) {
        char want[64], got[64];
        vendor_list(r->vendors, " or ", want, sizeof want);
        vendor_list(have, ", ", got, sizeof got);
        if (q)
            snprintf(why, len, "no card of vendor %s offers %s >= %s (cards that do: %s)", want,
                     runtime_names[q->runtime], q->min, got[0] ? got : "none");
        else
            snprintf(why, len, "no card of vendor %s (cards: %s)", want, got[0] ? got : "none");
        return 1;
    }
    /* 2. driver minimum, per vendor */
    pass = 0;
    for (size_t i = 0; i < n; i++)
        pass += CARD_IN(&cards[i]) && vendor_ok(r, &cards[i]) && driver_ok(r, &cards[i]);
    if (!pass) {
        /* name the first accepted vendor's newest driver */
        int vbest = -1;
        const char *newest = NULL;
        for (size_t i = 0; i < n; i++) {
            const cp_card *c = &cards[i];
            if (!CARD_IN(c) || !vendor_ok(r, c)) continue;
            if (vbest < 0 || (c->vendor == vbest && cp_version_cmp(c->driver, newest) > 0)) {
                vbest = c->vendor;
                newest = c->driver;
            }
        }
        snprintf(why, len, "no %s card has driver >= %s (newest: %s)", cp_vendor_name(vbest),
                 vbest >= 0 ? r->min_driver[vbest] : "?",
                 newest && newest[0] ? newest : "unknown");
        return 1;
    }
    /* 3. the class's stack: newest of any runtime it lists */
    pass = 0;
    for (size_t i = 0; i < n; i++)
        pass += CARD_IN(&cards[i]) && vendor_ok(r, &cards[i]) && driver_ok(r, &cards[i]) &&
                class_stack_ok(r, &cards[i]);
    if (!pass) {
        char want[160] = "", best[96] = "";
        for (int k = 0; k < CP_NRUNTIMES; k++) {
            if (!r->stack.ver[k][0]) continue;
            char one[64];
            snprintf(one, sizeof one, "%s >= %s", runtime_names[k], r->stack.ver[k]);
            add(want, sizeof want, "%s%s", want[0] ? " or " : "", one);
        }
        const char *bv = NULL;
        int bk = -1, bvend = -1;
        for (size_t i = 0; i < n; i++) {
            const cp_card *c = &cards[i];
            if (!CARD_IN(c) || !vendor_ok(r, c) || !driver_ok(r, c) || !c->stack) continue;
            for (int k = 0; k < CP_NRUNTIMES; k++)
                if (r->stack.ver[k][0] && c->stack->ver[k][0] &&
                    (!bv || cp_version_cmp(c->stack->ver[k], bv) > 0)) {
                    bv = c->stack->ver[k];
                    bk = k;
                    bvend = c->vendor;
                }
        }
        if (bv) snprintf(best, sizeof best, "%s %s on %s", runtime_names[bk], bv, cp_vendor_name(bvend));
        snprintf(why, len, "no card offers %s (newest: %s)", want, bv ? best : "none offered");
        return 1;
    }
#undef CARD_IN
    snprintf(why, len, "every card passes the compatibility rules");
    return 0;
}
