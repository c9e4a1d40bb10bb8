/*
 * demand.c - what one unit of a resource class counts for, in GPU-equivalents and GPU memory
 * (pure).  The one formula behind admission (the scheduler's class demand, round.c), the
 * overview (h_overview.c) and metering (a binding's weight, round.c): they can only agree.
 */
#include "sched.h"

#include "../inventory/inventory.h"

#include <stdlib.h>
#include <string.h>

void sch_unit_demand(int form, int gpus, const char *profile, int shared_mem_gib,
                     int shared_pct, int card_mem_gib, int64_t *milli, int64_t *mem_gib) {
    int card = card_mem_gib > 0 ? card_mem_gib : SCH_DEFAULT_CARD_GIB;
    if (form == SCH_MIG) {
        /* "3g.40gb": 3 of the card's 7 compute slices, 40 GiB; an AMD compute partition
         * "cpx.24gb": one of the card's 8 (dpx 2, tpx 3, qpx 4, spx 1), 24 GiB */
        int g = profile && profile[0] >= '0' && profile[0] <= '9' ? profile[0] - '0' : 0;
        const char *dot = profile ? strchr(profile, '.') : NULL;
        static const char amd_modes[] = "sdtqc";
        static const int amd_parts[] = {1, 2, 3, 4, 8};
        const char *am = profile && profile[0] && !strncmp(profile + 1, "px.", 3)
                             ? strchr(amd_modes, profile[0])
                             : NULL;
        if (am) *milli = 1000LL / amd_parts[am - amd_modes];
        else *milli = g * 1000LL / 7;
        *mem_gib = dot ? atoi(dot + 1) : 0;
    } else if (form == SCH_SHARED) {
        /* the larger of its memory share and its compute share of the card */
        int64_t by_mem = (int64_t)shared_mem_gib * 1000 / card, by_pct = (int64_t)shared_pct * 10;
        *milli = by_mem > by_pct ? by_mem : by_pct;
        *mem_gib = shared_mem_gib;
    } else {
        *milli = 1000LL * gpus;
        *mem_gib = (int64_t)card * gpus;
    }
}

int sch_class_card_gib(json_t *class_models, const char *const *models, const int *mem_gib,
                       int n) {
    int best = 0;
    for (int i = 0; i < n; i++) {
        if (mem_gib[i] <= best) continue;
        size_t k;
        json_t *v;
        json_array_foreach(class_models, k, v) {
            const char *m = json_string_value(v);
            if (m && inv_model_matches(m, models[i])) {
                best = mem_gib[i];
                break;
            }
        }
    }
    return best ? best : SCH_DEFAULT_CARD_GIB;
}
