/*
 * signer.c - signed audit checkpoints: the Ed25519 key files, and the
 * server's signer, which every interval (or every N events) signs the chain
 * head into audit_checkpoints and appends the same checkpoint, as one
 * fsync'd JSON line, to a file outside the store.
 *
 * The signer signs a head only when the records since its last checkpoint
 * extend that checkpoint (the incremental chain check), so a chain rewritten
 * behind the server's back is never blessed.  Only the server that leads
 * (store_lead) signs.
 *
 * Locking: `mu` guards stopping and the wake-up; `sign_mu` serialises
 * checkpoints (the thread and the final one at stop) and guards last_*.
 */
#include "audit.h"
#include "audit_int.h"

#include "../core/gtime.h"
#include "../core/jsonx.h"
#include "../core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- key files ---- */

/* Read a small text file's first line, trimmed, into buf. */
static int read_trimmed(const char *path, const char *what, char *buf, size_t n, gp_err *err) {
    FILE *f = fopen(path, "r");
    if (!f) return gp_err_set(err, errno == ENOENT ? GP_ENOTFOUND : GP_EIO,
                              "cannot read %s %s: %s", what, path, strerror(errno));
    size_t got = fread(buf, 1, n - 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad) return gp_err_set(err, GP_EIO, "cannot read %s %s", what, path);
    buf[got] = '\0';
    char *p = buf;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    size_t len = strlen(p);
    while (len && (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '\n' ||
                   p[len - 1] == '\r'))
        len--;
    memmove(buf, p, len);
    buf[len] = '\0';
    return GP_OK;
}

static int hex_exact(const char *hex, unsigned char *out, size_t n) {
    size_t got = 0;
    const char *end = NULL;
    if (strlen(hex) != 2 * n) return -1;
    if (sodium_hex2bin(out, n, hex, 2 * n, NULL, &got, &end) != 0 || got != n || *end) return -1;
    return 0;
}

static int write_all(int fd, const char *buf, size_t len) {
    while (len) {
        ssize_t w = write(fd, buf, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        buf += w;
        len -= (size_t)w;
    }
    return 0;
}

/* fsync the folder holding `path`, so that a file created there survives a crash. */
static void sync_dir_of(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    int fd = open(dirname(buf), O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

int audit_key_load(const char *path, int create, unsigned char *sk, char key_id[AUDIT_KEY_HEX],
                   int *created, gp_err *err) {
    unsigned char seed[crypto_sign_SEEDBYTES], pk[crypto_sign_PUBLICKEYBYTES];
    char text[256];
    *created = 0;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        if (errno != ENOENT || !create)
            return gp_err_set(err, GP_EIO, "cannot read audit signing key %s: %s", path,
                              strerror(errno));
        /* a new key, written whole to a temporary file and linked into place: a
         * crash never leaves half a key, and two servers starting at once never
         * overwrite each other (link fails when the name exists) */
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
        int fd = mkstemp(tmp);
        if (fd < 0)
            return gp_err_set(err, GP_EIO, "cannot create audit signing key %s: %s", path,
                              strerror(errno));
        randombytes_buf(seed, sizeof seed);
        sodium_bin2hex(text, sizeof text, seed, sizeof seed);
        size_t len = strlen(text);
        text[len++] = '\n';
        int bad = fchmod(fd, 0600) != 0 || write_all(fd, text, len) != 0 || fsync(fd) != 0;
        close(fd);
        sodium_memzero(text, sizeof text);
        int linked = !bad && link(tmp, path) == 0;
        int exists = !bad && !linked && errno == EEXIST;
        unlink(tmp);
        if (exists) {
            sodium_memzero(seed, sizeof seed);
            return audit_key_load(path, 0, sk, key_id, created, err);
        }
        if (!linked) {
            sodium_memzero(seed, sizeof seed);
            return gp_err_set(err, GP_EIO, "cannot write audit signing key %s: %s", path,
                              strerror(errno));
        }
        sync_dir_of(path);
        *created = 1;
    } else {
        if (!S_ISREG(sb.st_mode))
            return gp_err_set(err, GP_EINVALID, "audit signing key %s is not a file", path);
        if (sb.st_mode & 077)
            return gp_err_set(err, GP_EINVALID,
                              "audit signing key %s is readable by others (mode %03o): chmod "
                              "600 it",
                              path, (unsigned)(sb.st_mode & 0777));
        int rc = read_trimmed(path, "audit signing key", text, sizeof text, err);
        if (rc) return rc;
        rc = hex_exact(text, seed, sizeof seed);
        sodium_memzero(text, sizeof text);
        if (rc)
            return gp_err_set(err, GP_EINVALID,
                              "audit signing key %s must hold one line: a 32-byte seed in hex",
                              path);
    }
    crypto_sign_seed_keypair(pk, sk, seed);
    sodium_memzero(seed, sizeof seed);
    sodium_bin2hex(key_id, AUDIT_KEY_HEX, pk, sizeof pk);
    return GP_OK;
}

int audit_pubkey_read(const char *path, char key_id[AUDIT_KEY_HEX], gp_err *err) {
    char text[256];
    unsigned char pk[crypto_sign_PUBLICKEYBYTES];
    int rc = read_trimmed(path, "public key", text, sizeof text, err);
    if (rc) return rc;
    if (hex_exact(text, pk, sizeof pk) != 0)
        return gp_err_set(err, GP_EINVALID,
                          "public key file %s must hold an Ed25519 public key in hex (64 "
                          "characters, as audit-signing.pub)",
                          path);
    /* normalised to lower case, as key_id is written */
    sodium_bin2hex(key_id, AUDIT_KEY_HEX, pk, sizeof pk);
    return GP_OK;
}

int audit_pubkey_write(const char *path, const char key_id[AUDIT_KEY_HEX], gp_err *err) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return gp_err_set(err, GP_EIO, "cannot write %s: %s", tmp, strerror(errno));
    char line[AUDIT_KEY_HEX + 1];
    snprintf(line, sizeof line, "%s\n", key_id);
    int bad = fchmod(fd, 0644) != 0 || write_all(fd, line, strlen(line)) != 0 || fsync(fd) != 0;
    close(fd);
    if (bad || rename(tmp, path) != 0) {
        unlink(tmp);
        return gp_err_set(err, GP_EIO, "cannot write public key file %s", path);
    }
    return GP_OK;
}

/* ---- the signer ---- */

struct audit_signer {
    store_t *st;
    char *key_path, *pub_path, *file_path;
    int interval_s, every_events, lead_timeout_s;
    unsigned char sk[crypto_sign_SECRETKEYBYTES];
    char key_id[AUDIT_KEY_HEX];
    pthread_t th;
    int running;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stopping;
    pthread_mutex_t sign_mu;
    int64_t last_seq;             /* the newest valid checkpoint known (0: none) */
    char last_head[RND_HASH_LEN];
    int64_t last_try_us;          /* monotonic: when a checkpoint was last made or refused */
    int refused;                  /* the last attempt found the chain rewritten */
};

const char *audit_signer_key_id(const audit_signer *s) { return s->key_id; }

/* Adopt `cp` as the last checkpoint when it is ours, valid and newer. */
static void adopt(audit_signer *s, const audit_checkpoint *cp) {
    char why[200];
    if (cp->seq <= s->last_seq) return;
    if (audit_checkpoint_check(cp, s->key_id, why, sizeof why) != 0) return;
    s->last_seq = cp->seq;
    snprintf(s->last_head, sizeof s->last_head, "%s", cp->head);
}

/* The newest checkpoint row of the table, adopted when valid. */
static int adopt_table(audit_signer *s, store_tx *tx, gp_err *err) {
    store_stmt *q;
    int rc = store_query(tx, &q, err,
                         "SELECT " STORE_COLS(CHECKPOINT_COLUMNS) " FROM audit_checkpoints "
                         "WHERE key_id = ? ORDER BY seq DESC LIMIT 1",
                         "s", s->key_id);
    if (rc) return rc;
    rc = store_step(q, err);
    if (rc > 0) {
        audit_checkpoint cp;
        memset(&cp, 0, sizeof cp);
        cp.seq = store_int(q, CK_SEQ);
        snprintf(cp.head, sizeof cp.head, "%s",
                 store_text(q, CK_HEAD) ? store_text(q, CK_HEAD) : "");
        cp.count = store_int(q, CK_COUNT);
        cp.at_us = store_int(q, CK_AT);
        snprintf(cp.key_id, sizeof cp.key_id, "%s",
                 store_text(q, CK_KEY_ID) ? store_text(q, CK_KEY_ID) : "");
        snprintf(cp.signature, sizeof cp.signature, "%s",
                 store_text(q, CK_SIGNATURE) ? store_text(q, CK_SIGNATURE) : "");
        adopt(s, &cp);
    }
    store_done(q);
    return rc < 0 ? rc : GP_OK;
}

/* The newest valid checkpoint of the file (a torn or foreign line is skipped). */
static void adopt_file(audit_signer *s) {
    FILE *f = fopen(s->file_path, "r");
    if (!f) return;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) > 0) {
        json_t *j = json_loadb(line, (size_t)len, JSON_DISABLE_EOF_CHECK, NULL);
        audit_checkpoint cp;
        if (j && audit_checkpoint_from_json(j, &cp) == 0) adopt(s, &cp);
        json_decref(j);
    }
    free(line);
    fclose(f);
}

/* Append one checkpoint line to the file and fsync it. */
static int append_file(audit_signer *s, const audit_checkpoint *cp, gp_err *err) {
    struct stat sb;
    int existed = stat(s->file_path, &sb) == 0;
    int fd = open(s->file_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return gp_err_set(err, GP_EIO, "cannot open checkpoint file %s: %s", s->file_path,
                          strerror(errno));
    json_t *j = audit_checkpoint_json(cp);
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    int rc = GP_OK;
    if (!text) rc = gp_err_set(err, GP_ENOMEM, NULL);
    else {
        size_t len = strlen(text);
        char *line = malloc(len + 2);
        if (!line) rc = gp_err_set(err, GP_ENOMEM, NULL);
        else {
            memcpy(line, text, len);
            line[len++] = '\n';
            /* one write: a line is never interleaved, only possibly cut short by a crash */
            if (write_all(fd, line, len) != 0 || fsync(fd) != 0)
                rc = gp_err_set(err, GP_EIO, "cannot write checkpoint file %s: %s",
                                s->file_path, strerror(errno));
            free(line);
        }
        free(text);
    }
    close(fd);
    if (!rc && !existed) sync_dir_of(s->file_path);
    return rc;
}

/*
 * Read the head and check the records after the last checkpoint extend it.
 * OUT: *head_seq, head (the head to sign; *head_seq == last_seq: nothing new).
 * GP_ETAMPERED (err says why) when the chain does not extend the checkpoint.
 */
static int read_and_check(audit_signer *s, store_tx *tx, int64_t *head_seq,
                          char head[RND_HASH_LEN], gp_err *err) {
    store_stmt *q;
    int rc = store_query(tx, &q, err,
                         "SELECT " STORE_COLS(HEAD_COLUMNS) " FROM audit_head WHERE id = 1", "");
    if (rc) return rc;
    rc = store_step(q, err);
    if (rc <= 0) {
        store_done(q);
        return rc < 0 ? rc : gp_err_set(err, GP_ETAMPERED, "audit head row is missing");
    }
    *head_seq = store_int(q, AH_SEQ);
    snprintf(head, RND_HASH_LEN, "%s", store_text(q, AH_HASH) ? store_text(q, AH_HASH) : "");
    store_done(q);
    if (*head_seq < s->last_seq)
        return gp_err_set(err, GP_ETAMPERED,
                          "the audit chain ends at record %" PRId64 " but record %" PRId64
                          " was signed (records deleted)",
                          *head_seq, s->last_seq);
    if (*head_seq == s->last_seq) {
        if (strcmp(head, s->last_head) != 0)
            return gp_err_set(err, GP_ETAMPERED,
                              "the audit head differs from the last signed checkpoint (record "
                              "%" PRId64 ")",
                              s->last_seq);
        return GP_OK;
    }
    audit_chain c;
    audit_chain_resume(&c, s->last_seq, s->last_head);
    rc = store_query(tx, &q, err,
                     "SELECT " STORE_COLS(AUDIT_COLUMNS)
                     " FROM audit WHERE seq > ? AND seq <= ? ORDER BY seq",
                     "ii", s->last_seq, *head_seq);
    if (rc) return rc;
    while ((rc = store_step(q, err)) > 0) {
        audit_record r = {
            .seq = store_int(q, AU_SEQ),
            .id = store_text(q, AU_ID),
            .ts_us = store_int(q, AU_TS),
            .request_id = store_text(q, AU_REQUEST_ID),
            .actor = store_text(q, AU_ACTOR),
            .on_behalf = store_text(q, AU_ON_BEHALF),
            .source = store_text(q, AU_SOURCE),
            .action = store_text(q, AU_ACTION),
            .target_type = store_text(q, AU_TARGET_TYPE),
            .target_id = store_text(q, AU_TARGET_ID),
            .tenant = store_text(q, AU_TENANT),
            .project = store_text(q, AU_PROJECT),
            .result = store_text(q, AU_RESULT),
            .status = store_int(q, AU_STATUS),
            .summary = store_text(q, AU_SUMMARY),
            .prev_hash = store_text(q, AU_PREV_HASH),
            .hash = store_text(q, AU_HASH),
        };
        if (audit_chain_feed(&c, &r) < 0) break;
    }
    store_done(q);
    if (rc < 0) return rc;
    if (audit_chain_finish(&c, *head_seq, head) < 0)
        return gp_err_set(err, GP_ETAMPERED,
                          "the audit chain does not extend the last signed checkpoint (record "
                          "%" PRId64 "): at record %" PRId64 ": %s",
                          s->last_seq, c.bad_seq, c.reason);
    return GP_OK;
}

int audit_signer_checkpoint(audit_signer *s, int *made, gp_err *err) {
    if (made) *made = 0;
    pthread_mutex_lock(&s->sign_mu);
    int rc = GP_OK;
    int lead = store_lead(s->st, s->lead_timeout_s, err);
    if (lead != 1) { /* another server signs; ask again in an interval */
        s->last_try_us = gt_mono_us();
        pthread_mutex_unlock(&s->sign_mu);
        return lead < 0 ? lead : GP_OK;
    }
    gp_err_clear(err);
    store_tx *tx;
    int64_t head_seq = 0;
    char head[RND_HASH_LEN];
    if ((rc = store_begin(s->st, STORE_READ, &tx, err))) goto out;
    rc = adopt_table(s, tx, err);
    if (!rc) rc = read_and_check(s, tx, &head_seq, head, err);
    store_rollback(tx);
    s->last_try_us = gt_mono_us();
    if (rc == GP_ETAMPERED) {
        s->refused = 1;
        goto out;
    }
    s->refused = 0;
    if (rc || head_seq == s->last_seq) goto out;

    audit_checkpoint cp;
    memset(&cp, 0, sizeof cp);
    cp.seq = head_seq;
    cp.count = head_seq; /* the chain is gap-free from 1 (verified) */
    cp.at_us = gt_now_us();
    snprintf(cp.head, sizeof cp.head, "%s", head);
    audit_checkpoint_sign(&cp, s->sk);
    if ((rc = store_begin(s->st, STORE_WRITE, &tx, err))) goto out;
    rc = store_exec(tx, NULL, err,
                    "INSERT INTO audit_checkpoints (seq, head, count, at, key_id, signature) "
                    "VALUES (?,?,?,?,?,?) ON CONFLICT (seq) DO NOTHING",
                    "isiiss", cp.seq, cp.head, cp.count, cp.at_us, cp.key_id, cp.signature);
    if (rc) {
        store_rollback(tx);
        goto out;
    }
    if ((rc = store_commit(tx, err))) goto out;
    /* the file after the table: a crash between leaves the row alone, which is harmless */
    if (s->file_path && (rc = append_file(s, &cp, err))) goto out;
    s->last_seq = cp.seq;
    memcpy(s->last_head, cp.head, RND_HASH_LEN);
    if (made) *made = 1;
out:
    pthread_mutex_unlock(&s->sign_mu);
    return rc;
}

/* Is a checkpoint due: new events and the interval passed, or every_events of them? */
static int due(audit_signer *s) {
    gp_err err = GP_ERR_INIT;
    store_tx *tx;
    if (store_begin(s->st, STORE_READ, &tx, &err)) return 0;
    store_stmt *q;
    int64_t seq = -1;
    if (store_query(tx, &q, &err, "SELECT seq FROM audit_head WHERE id = 1", "") == GP_OK) {
        if (store_step(q, &err) > 0) seq = store_int(q, 0);
        store_done(q);
    }
    store_rollback(tx);
    pthread_mutex_lock(&s->sign_mu);
    int64_t last = s->last_seq, since = gt_mono_us() - s->last_try_us;
    int refused = s->refused;
    pthread_mutex_unlock(&s->sign_mu);
    if (seq < 0 || seq == last) return refused && since >= (int64_t)s->interval_s * 1000000;
    if (since >= (int64_t)s->interval_s * 1000000) return 1;
    return !refused && s->every_events > 0 && seq - last >= s->every_events;
}

static void sign_logged(audit_signer *s, const char *when) {
    gp_err err = GP_ERR_INIT;
    int made = 0;
    int rc = audit_signer_checkpoint(s, &made, &err);
    if (rc == GP_ETAMPERED)
        log_kv(LOG_ERROR, "audit chain rewritten: not signing it", "detail", err.msg, "when",
               when, (char *)NULL);
    else if (rc)
        log_kv(LOG_WARN, "audit checkpoint failed", "detail", err.msg, (char *)NULL);
    else if (made) {
        char seq[32];
        snprintf(seq, sizeof seq, "%" PRId64, s->last_seq);
        log_kv(LOG_DEBUG, "audit checkpoint signed", "seq", seq, (char *)NULL);
    }
}

static void *signer_main(void *arg) {
    audit_signer *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
        if (s->stopping) break;
        pthread_mutex_unlock(&s->mu);
        if (due(s)) sign_logged(s, "periodic");
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void signer_free(audit_signer *s) {
    sodium_memzero(s->sk, sizeof s->sk);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->sign_mu);
    free(s->key_path);
    free(s->pub_path);
    free(s->file_path);
    free(s);
}

int audit_signer_start(store_t *st, const audit_signer_config *cfg, audit_signer **out,
                       int *key_created, gp_err *err) {
    int created = 0;
    *out = NULL;
    if (key_created) *key_created = 0;
    if (!cfg->key_path) return gp_err_set(err, GP_EINVALID, "no audit signing key file");
    audit_signer *s = calloc(1, sizeof *s);
    if (!s) return gp_err_set(err, GP_ENOMEM, NULL);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    pthread_mutex_init(&s->sign_mu, NULL);
    s->st = st;
    s->interval_s = cfg->interval_s > 0 ? cfg->interval_s : 60;
    s->every_events = cfg->every_events;
    s->lead_timeout_s = cfg->lead_timeout_s;
    s->key_path = strdup(cfg->key_path);
    s->pub_path = cfg->pub_path ? strdup(cfg->pub_path) : NULL;
    s->file_path = cfg->file_path ? strdup(cfg->file_path) : NULL;
    if (!s->key_path || (cfg->pub_path && !s->pub_path) || (cfg->file_path && !s->file_path)) {
        signer_free(s);
        return gp_err_set(err, GP_ENOMEM, NULL);
    }
    int rc = audit_key_load(s->key_path, 1, s->sk, s->key_id, &created, err);
    if (!rc && s->pub_path) rc = audit_pubkey_write(s->pub_path, s->key_id, err);
    if (!rc) {
        if (s->file_path) adopt_file(s);
        store_tx *tx;
        if (!(rc = store_begin(st, STORE_READ, &tx, err))) {
            rc = adopt_table(s, tx, err);
            store_rollback(tx);
        }
    }
    s->last_try_us = gt_mono_us();
    if (!rc && pthread_create(&s->th, NULL, signer_main, s) != 0)
        rc = gp_err_set(err, GP_EINTERNAL, "cannot start the audit signer thread");
    if (rc) {
        signer_free(s);
        return rc;
    }
    s->running = 1;
    if (key_created) *key_created = created;
    *out = s;
    return GP_OK;
}

void audit_signer_stop(audit_signer *s) {
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (s->running) pthread_join(s->th, NULL);
    sign_logged(s, "shutdown");
    signer_free(s);
}
