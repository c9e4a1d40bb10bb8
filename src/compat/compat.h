/*
 * compat.h - accelerator compatibility rules (pure: strings and structs in,
 * decisions and reasons out; no I/O, no globals).  A module of its own, below both the
 * scheduler (placement) and the inventory (what a node reports), so neither depends on the
 * other through it.
 *
 * The words (docs/scheduling.md "Compatibility rules"):
 *   vendor   nvidia | amd | intel (Intel Gaudi)
 *   runtime  cuda (NVIDIA) | rocm (AMD) | synapse (Intel Gaudi SynapseAI): a card's "stack"
 *            is the runtimes its node offers for it, with versions ({"cuda":"12.4"})
 *   version  dotted numbers ("12.4", "6.2.0", "550.54.15"), compared part by part as numbers,
 *            missing parts 0 ("12" == "12.0")
 * A card (vendor, driver, stack) may take a unit of a job of a class when
 *   - the class's vendors are [] or hold the card's vendor,
 *   - the card's driver is at least the class's minimum for that vendor (when one is set),
 *   - the class's stack rule is {} or the card offers one of its runtimes at that version or
 *     newer,
 *   - the job's stack ("" or "rocm>=6.1") is "" or the card offers that runtime at that
 *     version or newer.
 */
#ifndef GP_COMPAT_H
#define GP_COMPAT_H

#include <jansson.h>
#include <stddef.h>

enum { CP_NVIDIA = 0, CP_AMD = 1, CP_INTEL = 2, CP_NVENDORS = 3 };
enum { CP_CUDA = 0, CP_ROCM = 1, CP_SYNAPSE = 2, CP_NRUNTIMES = 3 };

#define CP_VER_MAX 32   /* longest version text accepted */
#define CP_VER_PARTS 6  /* most dotted parts */

/* "nvidia" / "amd" / "intel" -> CP_*, or -1.  cp_vendor_name: the name, "?" if out of range. */
int cp_vendor_parse(const char *name);
const char *cp_vendor_name(int vendor);
/* "cuda" / "rocm" / "synapse" -> CP_*, or -1.  cp_runtime_name as above. */
int cp_runtime_parse(const char *name);
const char *cp_runtime_name(int runtime);
/* The runtime a vendor's cards run (CP_NVIDIA -> CP_CUDA, ...). */
int cp_vendor_runtime(int vendor);

/* 1 if `v` is a dotted version: 1..CP_VER_PARTS parts of 1..9 digits, at most CP_VER_MAX-1
 * characters ("12", "6.2.0", "550.54.15"); else 0. */
int cp_version_valid(const char *v);

/* Compare two dotted versions numerically part by part (missing parts are 0): <0, 0, >0.
 * Text that is not a version compares below every version (and equal to itself). */
int cp_version_cmp(const char *a, const char *b);

/* A card's stack: the version each runtime is offered at ("" = not offered). */
typedef struct cp_stack {
    char ver[CP_NRUNTIMES][CP_VER_MAX];
} cp_stack;

/*
 * Parse a stack object {"cuda":"12.4","rocm":"6.2.0"} (NULL or {}: nothing offered).  Keys
 * must be runtimes, values versions.  Returns 0, or -1 with the reason in why[n].
 */
int cp_stack_parse(json_t *obj, cp_stack *out, char *why, size_t n);
/* The stack as a JSON object (new reference). */
json_t *cp_stack_json(const cp_stack *s);

/* A job's stack requirement: runtime >= version, or none (runtime -1). */
typedef struct cp_req {
    int runtime;
    char min[CP_VER_MAX];
} cp_req;

/*
 * Parse "" (no requirement) or "<runtime>>=<version>" ("rocm>=6.1"; spaces around ">=" are
 * allowed).  Returns 0, or -1 with the reason.  cp_req_format writes the canonical text back
 * ("rocm>=6.1", "" for none).
 */
int cp_req_parse(const char *text, cp_req *out, char *why, size_t n);
void cp_req_format(const cp_req *r, char *buf, size_t n);

/* A class's rules. */
typedef struct cp_rules {
    unsigned vendors;                        /* bit per CP_* vendor; 0 = any vendor */
    char min_driver[CP_NVENDORS][CP_VER_MAX]; /* "" = no minimum for that vendor */
    cp_stack stack;                          /* minimum per runtime; all "" = no rule */
} cp_rules;

/*
 * Parse a class's rules from its JSON fields: vendors ["nvidia","amd"] ([] or NULL: any),
 * min_drivers {"nvidia":"535","amd":"6.8"} ({} or NULL: none), stack {"cuda":"12.2"} ({} or
 * NULL: none).  A min_drivers vendor outside a non-empty vendors list is refused (it could
 * never apply).  Returns 0, or -1 with the reason.
 */
int cp_rules_parse(json_t *vendors, json_t *min_drivers, json_t *stack, cp_rules *out,
                   char *why, size_t n);

/* A card as the rules see it. */
typedef struct cp_card {
    int vendor;           /* CP_* */
    const char *driver;   /* the card's driver version ("" unknown) */
    const cp_stack *stack;
} cp_card;

/* Which rule refuses a card (CP_OK: none). */
enum { CP_OK = 0, CP_BAD_VENDOR, CP_BAD_DRIVER, CP_BAD_CLASS_STACK, CP_BAD_JOB_STACK };

/*
 * May `card` take work of a class with `rules` (NULL: no rules) for a job needing `req`
 * (NULL or runtime -1: nothing)?  Returns CP_OK or the first rule (in the order above) that
 * refuses it.  An unknown driver ("") fails a driver minimum; a runtime not offered fails a
 * stack rule.
 */
int cp_card_check(const cp_rules *rules, const cp_req *req, const cp_card *card);

/*
 * Why no card of `cards[0..n)` passes (all of them fail cp_card_check): when no card offers
 * the job's stack, that (with the newest version there is); else the class's rule that leaves
 * none, tried in cp_card_check's order over the cards that offer the job's stack and that the
 * earlier rules let through, with the best the fleet has, e.g.
 *   "no card offers rocm >= 6.3 (newest: 6.2.0 on amd)"
 *   "no card of vendor amd or intel (cards: nvidia)"
 *   "no card of vendor nvidia offers rocm >= 6 (cards that do: amd)"
 *   "no amd card has driver >= 6.8 (newest: 6.7.1)"
 *   "no card offers cuda >= 12.6 or rocm >= 6.2 (newest: cuda 12.4 on nvidia)"
 * n == 0: "no card of the class's models".  Writes why[len].  Returns 1, or 0 when every
 * card passes the rules after all (why says so).
 */
int cp_why_none(const cp_rules *rules, const cp_req *req, const cp_card *cards, size_t n,
                 char *why, size_t len);

#endif
