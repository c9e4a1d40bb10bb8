/*
 * quota.h - hard ceilings and the admission arithmetic (pure), plus their
 * storage.
 *
 * Dimensions: GPU-equivalents (milli: a whole card 1000, a MIG slice its
 * share of the card's 7 compute slices, a shared slice the larger of its
 * memory and compute share), GPU memory (GiB), CPUs, memory (GiB),
 * concurrent jobs, card-hours this calendar month (milli-hours), and units
 * per resource class.  QUOTA_NONE (-1) means no ceiling.  A tenant's ceiling
 * bounds the sum of its projects; a project's own ceiling may not exceed its
 * tenant's, and a dimension it leaves open inherits the tenant's.  Admission reserves the job's demand against both.
 */
#ifndef GP_QUOTA_H
#define GP_QUOTA_H

#include "../core/err.h"
#include "../store/store.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define QUOTA_NONE (-1)

enum { QD_GPU_MILLI, QD_GPU_MEM, QD_CPUS, QD_MEM, QD_JOBS, QD_CARD_HOURS, QD__N };

/* Name of a dimension as it appears in reasons ("gpus", "gpu_memory_gib", ...). */
const char *quota_dim_name(int d);

/* Gateway ceilings (not admission dimensions: the gateway enforces them per request). */
enum { QG_TOKENS_MONTH, QG_RPM, QG_TPM, QG__N };

#define QUOTA_MAX_CLASSES 32
#define QUOTA_MAX_GCLASSES 8

typedef struct quota_set {
    int64_t v[QD__N];                        /* ceilings; QUOTA_NONE = none */
    int nclass;
    char class_name[QUOTA_MAX_CLASSES][64];  /* per-class unit ceilings */
    int64_t class_units[QUOTA_MAX_CLASSES];
    int64_t g[QG__N];                        /* gateway ceilings; QUOTA_NONE = none */
    int card_hours_stop;        /* at the card-hour ceiling: 0 let running jobs finish, 1 stop them */
    int64_t card_hours_grace_s; /* ... after this long a warning alarm stands (default 600) */
    /* Guaranteed share (a tenant's only; docs/scheduling.md "Guarantees", share.h): GPUs in
     * milli the tenant is entitled to whenever it asks, QUOTA_NONE = none (0 once another
     * tenant has one: then all its work is borrowed).  The `gpus` ceiling bounds it; work above it is
     * borrowed.  kept: the part of it never lent (0 .. guarantee); weight: its weight among
     * borrowers (1 .. 1000). */
    int64_t guarantee, kept, weight;
    /* Guarantees of one resource class each (a tenant's only; docs/scheduling.md "A guarantee
     * per class"): GPUs in milli of that class's work the tenant is entitled to, and the part
     * of it kept from lending.  The tenant's work of a class with one counts against it alone;
     * the rest against `guarantee`.  They and `guarantee` add up to the gpus ceiling at most. */
    int ngclass;
    char gclass_name[QUOTA_MAX_GCLASSES][64];
    int64_t gclass_g[QUOTA_MAX_GCLASSES], gclass_kept[QUOTA_MAX_GCLASSES];
    /* Guarantees in one pool each, over every class (a tenant's only; docs/scheduling.md "A
     * guarantee per pool"): GPUs in milli of the tenant's work placed in that pool, and the
     * part kept from lending.  Work of a class with a guarantee of its own counts against
     * that; other work running in such a pool against the pool's; the rest against
     * `guarantee`.  All of them add up to the gpus ceiling at most. */
    int ngpool;
    char gpool_name[QUOTA_MAX_GCLASSES][64];
    int64_t gpool_g[QUOTA_MAX_GCLASSES], gpool_kept[QUOTA_MAX_GCLASSES];
} quota_set;

/* No ceiling anywhere. */
void quota_unlimited(quota_set *q);

/* Index of class `name`'s own guarantee in q->gclass_*, or -1. */
int quota_gclass(const quota_set *q, const char *name);
/* Index of pool `name`'s own guarantee in q->gpool_*, or -1. */
int quota_gpool(const quota_set *q, const char *name);
/* The guarantee over every class: `guarantee` (QUOTA_NONE as 0) plus the classes' and the
 * pools' own. */
int64_t quota_guarantee_total(const quota_set *q);

/* Ceiling for class `name` (QUOTA_NONE when not set). */
int64_t quota_class_limit(const quota_set *q, const char *name);

/*
 * Parse the API shape {"gpus","gpu_memory_gib","cpus","memory_gib",
 * "concurrent_jobs","card_hours_month","class_gpus":{"name":n},
 * "tokens_month","requests_per_minute","tokens_per_minute",
 * "card_hours_policy":"finish"|"stop","card_hours_grace_seconds":N,
 * "guaranteed_gpus","kept_gpus","borrow_weight",
 * "class_guarantees":{"name":{"guaranteed_gpus":g,"kept_gpus":k}}} (null or absent = no ceiling, no
 * guarantee, nothing kept, weight 1; gpus, card_hours and the guarantee may be fractional;
 * the guarantee at most the gpus ceiling, kept at most the guarantee).
 */
int quota_parse(json_t *j, quota_set *out, gp_err *err);
json_t *quota_json(const quota_set *q);

/*
 * A partial change (PATCH …/quota, RFC 7396 merge patch): `patch` (borrowed)
 * in the shape quota_parse() reads, applied over `cur` into *out.  A member
 * left out keeps its ceiling, null lifts it, a value sets it; in
 * "class_gpus" the same holds per class (and "class_gpus": null lifts every
 * class ceiling).  GP_EINVALID (out untouched) when the patch or the result
 * is not valid.
 */
int quota_patch(const quota_set *cur, json_t *patch, quota_set *out, gp_err *err);

/*
 * Would `proposed` (a project's ceilings) exceed `tenant`'s?  GP_EINVALID
 * naming the first dimension that does.  A dimension the project leaves open
 * (QUOTA_NONE) inherits the tenant's ceiling and never exceeds it.
 */
int quota_within(const quota_set *proposed, const quota_set *tenant, gp_err *err);
/* The ceilings a project (`p`) inherits from its tenant (`t`): each dimension the tenant caps
 * and the project leaves open, with the tenant's value, in quota_json()'s names (a new
 * object; {} when none). */
json_t *quota_inherited_json(const quota_set *p, const quota_set *t);

/* 1 if `next` raises any ceiling of `cur` (a lifted or higher limit), or gives more
 * guarantee, more kept or more weight (a guarantee where there was none is more). */
int quota_raises(const quota_set *cur, const quota_set *next);

/* Store: ceilings of a tenant (project_id NULL) or project; unlimited when none stored. */
int quota_load(store_tx *tx, const char *tenant_id, const char *project_id, quota_set *out,
               gp_err *err);
int quota_save(store_tx *tx, const char *tenant_id, const char *project_id, const quota_set *q,
               gp_err *err);

#endif
