/*
 * jobs_int.h - internals shared by src/sched/ store-side files.
 */
#ifndef GP_JOBS_INT_H
#define GP_JOBS_INT_H

#include "jobs.h"

/* Append a job event (submitted, admitted, placed, preempted, cancelled, ...). */
int jobs__event(store_tx *tx, const char *job, const char *kind, const char *msg, gp_err *err);

/*
 * End every open binding of `job` with `end_reason` and requeue it
 * (recovery "requeue") or fail it, the reason saying `why`.  OUT: *outcome
 * "requeued" | "failed".
 */
int jobs__stop(store_tx *tx, const char *job, const char *recovery, const char *end_reason,
               const char *why, const char **outcome, gp_err *err);

/* Start of the UTC calendar month holding `now`; OUT (optional) its name "2026-12". */
int64_t jobs__month_start(int64_t now, char month[16]);

#endif
