/*
 * jobs_int.h - internals shared by src/sched/ store-side files.
 */
#ifndef GP_JOBS_INT_H
#define GP_JOBS_INT_H

#include "jobs.h"

/* Append a job event (submitted, admitted, placed, preempted, cancelled, ...). */
int jobs__event(store_tx *tx, const char *job, const char *kind, const char *msg, gp_err *err);

#endif
