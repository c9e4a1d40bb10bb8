/*
 * interfere.c - interference between the jobs sharing one GPU (see health.h).
 * Pure: the caller gathers the figures and keeps the strikes.
 *
 * Shared slices are soft isolation (MPS): nothing in hardware stops a job
 * from using more memory than its slice or more SMs than its share.  This
 * judges one sample of one card and says who broke its slice and whom that
 * hurt.  Memory is judged at once (another job's allocation may fail any
 * moment); compute only when sustained, because bursts are normal.
 */
#include "health.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

const char *intf_action_name(int action) { return action == INTF_STOP ? "stop" : "alert"; }

int intf_action_parse(const char *name) {
    if (!name) return -1;
    if (!strcmp(name, "alert")) return INTF_ALERT;
    if (!strcmp(name, "stop")) return INTF_STOP;
    return -1;
}

/* Does job i get less than its share while having work on the card? */
static int starved(const intf_slice *s) { return s->sm_pct >= 0 && s->sm_pct < s->percent; }

int intf_eval(const health_policy *p, intf_slice *slices, int n, int unbound_sm,
              intf_finding *out, int max) {
    assert(p && (n == 0 || slices) && n >= 0 && n <= 32 && max >= 0);
    int busy = unbound_sm > 0 ? unbound_sm : 0;
    for (int i = 0; i < n; i++)
        if (slices[i].sm_pct > 0) busy += slices[i].sm_pct;
    int saturated = busy >= p->contention_busy_pct;
    int nf = 0;
    for (int i = 0; i < n; i++) {
        intf_slice *s = &slices[i];
        /* memory: over its slice, now */
        if (s->used_mib >= 0 && s->limit_mib > 0 && s->used_mib > s->limit_mib && nf < max) {
            intf_finding *f = &out[nf++];
            memset(f, 0, sizeof *f);
            f->offender = i;
            f->kind = INTF_MEMORY;
            for (int k = 0; k < n; k++)
                if (k != i) f->victims[f->nvictims++] = k;
            snprintf(f->detail, sizeof f->detail, "uses %lld MiB of GPU memory; its slice holds %lld MiB",
                     (long long)s->used_mib, (long long)s->limit_mib);
        }
        /* compute: above its share on a saturated card while someone else starves */
        int over = s->sm_pct >= 0 && s->sm_pct > s->percent + p->contention_margin_pct;
        int others_starve = 0;
        for (int k = 0; k < n && over && saturated; k++)
            if (k != i && starved(&slices[k])) others_starve = 1;
        if (!(over && saturated && others_starve)) {
            s->strikes = 0;
            continue;
        }
        s->strikes++;
        if (s->strikes < p->contention_samples || nf >= max) continue;
        intf_finding *f = &out[nf++];
        memset(f, 0, sizeof *f);
        f->offender = i;
        f->kind = INTF_CONTENTION;
        for (int k = 0; k < n; k++)
            if (k != i && starved(&slices[k])) f->victims[f->nvictims++] = k;
        snprintf(f->detail, sizeof f->detail,
                 "uses %d%% of the SMs (its share is %d%%) on a saturated card for %d samples",
                 s->sm_pct, s->percent, s->strikes);
    }
    assert(nf <= max);
    return nf;
}
