/*
 * cmd_backup.c - `gpupool backup --data DIR --to FILE` and `gpupool restore
 * --from FILE --data DIR`: an online backup of an SQLite data folder, and
 * its restore into a new one (docs/operations.md).
 *
 * The backup FILE is a POSIX tar archive (`tar tvf FILE` lists it), mode
 * 0600, written to FILE.tmp and renamed into place once complete:
 *   gpupool-backup.json       the manifest (first): format, time, schema version, files
 *   audit-checkpoints.jsonl   the signed checkpoints (when the folder has them)
 *   audit-signing.pub         the public key
 *   audit-signing.key         the signing key, only with --include-key (docs/audit.md:
 *                             keep the key out of the database's backups)
 *   gpupool.db                the database, copied with store_backup()
 * Order matters for `audit verify`: the checkpoint file is copied before the
 * database, so every checkpoint it holds is in the copy's table too (the
 * copy may hold newer ones; the check allows that, not the reverse).  A last
 * line still being appended is left out.
 *
 * Without the key in the backup, restore takes it with --audit-key FILE and
 * checks it is the key of the backup's public key: a server started without
 * it would make a new key, and the old checkpoints would no longer verify.
 *
 * admin.token is not copied: the store keeps only its hash, so the bootstrap
 * token goes on working with the file the operator kept; server.url is
 * rewritten at every start.  PostgreSQL stores are backed up with pg_dump.
 */
#include "cli.h"

#include "../audit/audit.h"
#include "../core/gtime.h"
#include "../store/store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MANIFEST "gpupool-backup.json"
#define FORMAT "gpupool-backup-v1"

/* What a backup may hold, and the mode each is restored with. */
static const struct {
    const char *name;
    int mode;
    int required;
} members[] = {
    {MANIFEST, 0600, 1},
    {"audit-checkpoints.jsonl", 0600, 0},
    {"audit-signing.pub", 0644, 0},
    {"audit-signing.key", 0600, 0},
    {"gpupool.db", 0600, 1},
};
enum { NMEMBERS = sizeof members / sizeof members[0] };

static const char backup_usage[] =
    "usage: gpupool backup --data DIR --to FILE [--include-key] [--audit-key FILE]\n"
    "\n"
    "An online backup of a server's SQLite data folder into one file (a tar archive,\n"
    "mode 0600), consistent while the server runs and takes writes: the database\n"
    "(SQLite's backup API, one snapshot), the audit public key and the signed\n"
    "checkpoint file.  FILE must not exist.  Restore it with `gpupool restore`.\n"
    "\n"
    "  --data DIR        the server's data folder (default ./var)\n"
    "  --to FILE         the backup file to write\n"
    "  --include-key     put the audit signing key in too (then the backup can sign\n"
    "                    audit checkpoints: keep it as secret as the key). Without it,\n"
    "                    keep DIR/audit-signing.key apart: restore asks for it\n"
    "  --audit-key FILE  the key to include, when the server runs with --audit-key\n"
    "                    (implies --include-key; default DIR/audit-signing.key)\n"
    "\n"
    "PostgreSQL stores: pg_dump (docs/operations.md).\n";

static const char restore_usage[] =
    "usage: gpupool restore --from FILE --data DIR [--audit-key KEYFILE]\n"
    "\n"
    "Restore a `gpupool backup` file into DIR, which must be new or empty (an existing\n"
    "data folder is never overwritten).  Then start `gpupool server --data DIR`, and\n"
    "check it with `gpupool check --data DIR` and `gpupool audit verify --data DIR`.\n"
    "\n"
    "  --audit-key KEYFILE  the audit signing key, when the backup was made without\n"
    "                       --include-key: it must be the key of the backup's public\n"
    "                       key; it is copied to DIR/audit-signing.key (mode 0600)\n"
    "\n"
    "admin.token is not in the backup: keep the one you have (it goes on working).\n";

/* ---------------------------------------------------------------- tar (ustar) */

static void octal(char *field, size_t width, uint64_t v) {
    /* width-1 octal digits and a NUL; sizes beyond that use the base-256 form */
    if (width == 12 && v >= 077777777777ULL) {
        memset(field, 0, width);
        field[0] = (char)0x80;
        for (size_t i = width - 1; i > 0; i--, v >>= 8) field[i] = (char)(v & 0xff);
        return;
    }
    field[width - 1] = '\0';
    for (size_t i = width - 1; i > 0; i--, v >>= 3) field[i - 1] = (char)('0' + (v & 7));
}

static int tar_header(FILE *out, const char *name, int mode, uint64_t size, int64_t mtime) {
    unsigned char h[512];
    memset(h, 0, sizeof h);
    snprintf((char *)h, 100, "%s", name);
    octal((char *)h + 100, 8, (uint64_t)mode);
    octal((char *)h + 108, 8, 0);
    octal((char *)h + 116, 8, 0);
    octal((char *)h + 124, 12, size);
    octal((char *)h + 136, 12, (uint64_t)(mtime > 0 ? mtime : 0));
    h[156] = '0';
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (size_t i = 0; i < sizeof h; i++) sum += h[i];
    octal((char *)h + 148, 7, sum); /* six digits, a NUL, then the space */
    h[155] = ' ';
    return fwrite(h, 1, sizeof h, out) == sizeof h ? 0 : -1;
}

static int tar_pad(FILE *out, uint64_t size) {
    static const char zero[512];
    size_t pad = (size_t)((512 - size % 512) % 512);
    return fwrite(zero, 1, pad, out) == pad ? 0 : -1;
}

/* Copy `size` bytes from `in` to `out`.  RET: 0; -1 when `in` ends or fails first; -2 when
 * `out` cannot be written. */
static int copy_bytes(FILE *in, FILE *out, uint64_t size) {
    char buf[65536];
    uint64_t left = size;
    while (left) {
        size_t want = left < sizeof buf ? (size_t)left : sizeof buf;
        size_t got = fread(buf, 1, want, in);
        if (got != want) return -1;
        if (fwrite(buf, 1, got, out) != got) return -2;
        left -= got;
    }
    return 0;
}

/* Append the first `size` bytes of file `path` as member `name`. */
static int tar_add_file(FILE *out, const char *name, const char *path, int mode, uint64_t size,
                        gp_err *err) {
    FILE *in = fopen(path, "rb");
    if (!in) return gp_err_set(err, GP_EIO, "cannot read %s: %s", path, strerror(errno));
    struct stat sb;
    int64_t mtime = fstat(fileno(in), &sb) == 0 ? (int64_t)sb.st_mtime : 0;
    int bad = tar_header(out, name, mode, size, mtime) || copy_bytes(in, out, size);
    fclose(in);
    if (bad || tar_pad(out, size))
        return gp_err_set(err, GP_EIO, "cannot write member %s into the backup", name);
    return GP_OK;
}

static int tar_add_bytes(FILE *out, const char *name, const char *bytes, size_t n) {
    if (tar_header(out, name, 0600, n, gt_now_us() / 1000000)) return -1;
    if (fwrite(bytes, 1, n, out) != n) return -1;
    return tar_pad(out, n);
}

static int parse_size(const unsigned char *f, uint64_t *out) {
    uint64_t v = 0;
    if (f[0] & 0x80) {
        for (int i = 1; i < 12; i++) v = (v << 8) | f[i];
        *out = v;
        return 0;
    }
    int digits = 0;
    for (int i = 0; i < 12 && f[i] && f[i] != ' '; i++) {
        if (f[i] < '0' || f[i] > '7') return -1;
        v = v * 8 + (uint64_t)(f[i] - '0');
        digits++;
    }
    *out = v;
    return digits ? 0 : -1;
}

/* Read one header: 1 a member (name, size), 0 the end of the archive, -1 not a valid one. */
static int tar_next(FILE *in, char name[101], uint64_t *size) {
    unsigned char h[512];
    if (fread(h, 1, sizeof h, in) != sizeof h) return -1;
    int zero = 1;
    for (size_t i = 0; i < sizeof h; i++) zero &= h[i] == 0;
    if (zero) return 0;
    unsigned want = 0, sum = 0;
    for (int i = 148; i < 156 && h[i] >= '0' && h[i] <= '7'; i++) want = want * 8 + (h[i] - '0');
    for (size_t i = 0; i < sizeof h; i++) sum += (i >= 148 && i < 156) ? ' ' : h[i];
    if (sum != want || memcmp(h + 257, "ustar", 5) != 0) return -1;
    if (h[156] != '0' && h[156] != '\0') return -1; /* regular files only */
    if (h[345]) return -1;                           /* no prefix: our names are short */
    memcpy(name, h, 100);
    name[100] = '\0';
    return parse_size(h + 124, size) ? -1 : 1;
}

/* ---------------------------------------------------------------- helpers */

/* Paths are at most PATH_LEN - 1 bytes: the commands refuse longer folders up front. */
#define PATH_LEN 4200
#define ARG_MAX_LEN 4000

/* buf (PATH_LEN) = a + b (b may start with '/'). */
static void join(char *buf, const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la + lb >= PATH_LEN) la = lb = 0; /* cannot happen: arguments are checked */
    memcpy(buf, a, la);
    memcpy(buf + la, b, lb);
    buf[la + lb] = '\0';
}

/* buf (PATH_LEN) = dir/name. */
static void join3(char *buf, const char *dir, const char *name) {
    join(buf, dir, "/");
    size_t l = strlen(buf), ln = strlen(name);
    if (l + ln < PATH_LEN) memcpy(buf + l, name, ln + 1);
}

static int file_size(const char *path, uint64_t *size) {
    struct stat sb;
    if (stat(path, &sb) != 0) return -1;
    *size = (uint64_t)sb.st_size;
    return 0;
}

/*
 * Copy file `src` into a new file `dest` (0600; never over an existing one).
 * whole_lines (the checkpoint file): only up to its last complete line.  A
 * line the server is still appending is left out: the restored server
 * appends after it, so a torn line would sit in the middle of the file.
 */
static int copy_file(const char *src, const char *dest, int whole_lines, gp_err *err) {
    FILE *in = fopen(src, "rb");
    if (!in) return gp_err_set(err, GP_EIO, "cannot read %s: %s", src, strerror(errno));
    int fd = open(dest, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    FILE *out = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!out) {
        if (fd >= 0) close(fd);
        fclose(in);
        return gp_err_set(err, GP_EIO, "cannot create %s: %s", dest, strerror(errno));
    }
    int bad = 0;
    if (whole_lines) {
        char *line = NULL;
        size_t cap = 0;
        ssize_t n;
        while (!bad && (n = getline(&line, &cap, in)) > 0)
            if (line[n - 1] == '\n' && fwrite(line, 1, (size_t)n, out) != (size_t)n) bad = 1;
        free(line);
    } else {
        char buf[8192];
        size_t got;
        while (!bad && (got = fread(buf, 1, sizeof buf, in)) > 0)
            if (fwrite(buf, 1, got, out) != got) bad = 1;
    }
    fclose(in);
    if (fclose(out) != 0) bad = 1;
    return bad ? gp_err_set(err, GP_EIO, "cannot write %s", dest) : GP_OK;
}

static void remove_stage(const char *stage) {
    char p[PATH_LEN];
    for (int i = 0; i < NMEMBERS; i++) {
        join3(p, stage, members[i].name);
        unlink(p);
    }
    rmdir(stage);
}

/* The folder that holds `path` ("." for a bare name), into buf. */
static void dir_of(const char *path, char *buf, size_t n) {
    snprintf(buf, n, "%s", path);
    char *slash = strrchr(buf, '/');
    if (!slash) snprintf(buf, n, ".");
    else if (slash == buf) buf[1] = '\0';
    else *slash = '\0';
}

static int fsync_path(const char *path, int dir) {
    int fd = open(path, (dir ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* ---------------------------------------------------------------- backup */

static int do_backup(cli_ctx *ctx, const char *data, const char *to, int with_key,
                     const char *akey) {
    gp_err err = GP_ERR_INIT;
    char dir[PATH_LEN], stage[PATH_LEN], tmp[PATH_LEN], p[PATH_LEN], src[PATH_LEN];
    if (access(to, F_OK) == 0)
        return cli_error(CLI_FAIL, "backup: %s exists; give a new file name", to);
    join3(src, data, "gpupool.db");
    if (access(src, F_OK) != 0)
        return cli_error(CLI_FAIL, "backup: no store at %s: %s", src, strerror(errno));
    dir_of(to, dir, sizeof dir);
    join3(stage, dir, ".gpupool-backup.XXXXXX");
    if (!mkdtemp(stage))
        return cli_error(CLI_FAIL, "backup: cannot create a folder next to %s: %s", to,
                         strerror(errno));
    join(tmp, to, ".tmp");
    int rc = GP_OK, have[NMEMBERS] = {0}, version = 0;
    /* 1. the checkpoint file, before the database (see the top of this file) */
    join3(src, data, "audit-checkpoints.jsonl");
    join3(p, stage, members[1].name);
    if (access(src, F_OK) == 0 && !(rc = copy_file(src, p, 1, &err))) have[1] = 1;
    /* 2. the keys */
    join3(src, data, "audit-signing.pub");
    join3(p, stage, members[2].name);
    if (!rc && access(src, F_OK) == 0 && !(rc = copy_file(src, p, 0, &err))) have[2] = 1;
    if (akey) join(src, akey, "");
    else join3(src, data, "audit-signing.key");
    join3(p, stage, members[3].name);
    if (!rc && akey && access(src, R_OK) != 0)
        rc = gp_err_set(&err, GP_EIO, "cannot read --audit-key %s: %s", akey, strerror(errno));
    if (!rc && with_key && access(src, F_OK) == 0 && !(rc = copy_file(src, p, 0, &err))) have[3] = 1;
    /* 3. the database: one consistent snapshot, while the server goes on writing */
    join3(src, data, "gpupool.db");
    join3(p, stage, members[4].name);
    if (!rc && !(rc = store_backup(src, p, &version, &err))) have[4] = 1;
    /* 4. the archive: manifest first */
    char when[40];
    gt_format_us(gt_now_us(), when, sizeof when);
    json_t *files = json_array();
    for (int i = 1; i < NMEMBERS; i++)
        if (have[i]) json_array_append_new(files, json_string(members[i].name));
    json_t *man = json_pack("{s:s,s:s,s:i,s:o}", "format", FORMAT, "created_at", when,
                            "schema_version", version, "files", files);
    char *mtext = man ? json_dumps(man, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(man);
    FILE *out = NULL;
    int made_tmp = 0;
    if (!rc) {
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        made_tmp = fd >= 0;
        if (fd < 0 || !(out = fdopen(fd, "wb"))) {
            if (fd >= 0) close(fd);
            rc = gp_err_set(&err, GP_EIO, "cannot create %s: %s", tmp, strerror(errno));
        }
    }
    if (!rc && (!mtext || tar_add_bytes(out, MANIFEST, mtext, strlen(mtext))))
        rc = gp_err_set(&err, GP_EIO, "cannot write %s", tmp);
    for (int i = 1; !rc && i < NMEMBERS; i++) {
        if (!have[i]) continue;
        uint64_t size = 0;
        join3(p, stage, members[i].name);
        if (file_size(p, &size)) rc = gp_err_set(&err, GP_EIO, "cannot stat %s", p);
        else rc = tar_add_file(out, members[i].name, p, members[i].mode, size, &err);
    }
    static const char end[1024];
    if (!rc && fwrite(end, 1, sizeof end, out) != sizeof end)
        rc = gp_err_set(&err, GP_EIO, "cannot write %s", tmp);
    if (out && (fflush(out) != 0 || fsync(fileno(out)) != 0) && !rc)
        rc = gp_err_set(&err, GP_EIO, "cannot write %s: %s", tmp, strerror(errno));
    if (out && fclose(out) != 0 && !rc) rc = gp_err_set(&err, GP_EIO, "cannot write %s", tmp);
    if (!rc && link(tmp, to) != 0) /* never over a file that appeared meanwhile */
        rc = gp_err_set(&err, GP_EIO, "cannot create %s: %s", to, strerror(errno));
    if (made_tmp) unlink(tmp);
    if (!rc) fsync_path(dir, 1);
    free(mtext);
    remove_stage(stage);
    if (rc) return cli_error(CLI_FAIL, "backup: %s", err.msg);
    uint64_t bytes = 0;
    file_size(to, &bytes);
    if (ctx->json) {
        json_t *j = json_pack("{s:s,s:s,s:I,s:i,s:[]}", "file", to, "created_at", when, "bytes",
                              (json_int_t)bytes, "schema_version", version, "files");
        for (int i = 1; j && i < NMEMBERS; i++)
            if (have[i]) json_array_append_new(json_object_get(j, "files"), json_string(members[i].name));
        cli_print_object(ctx, j);
        json_decref(j);
    } else {
        printf("backup of %s written to %s (%llu bytes, schema version %d):", data, to,
               (unsigned long long)bytes, version);
        for (int i = 1; i < NMEMBERS; i++)
            if (have[i]) printf(" %s", members[i].name);
        printf("\n");
        if (!have[3] && have[2])
            printf("the audit signing key is not in it: keep %s%s apart from backups; "
                   "`gpupool restore --audit-key` asks for it\n",
                   data, "/audit-signing.key");
    }
    return CLI_OK;
}

int cli_cmd_backup(cli_ctx *ctx, int argc, char **argv) {
    static const struct option lo[] = {{"data", required_argument, 0, 'd'},
                                       {"to", required_argument, 0, 't'},
                                       {"store", required_argument, 0, 's'},
                                       {"audit-key", required_argument, 0, 'k'},
                                       {"include-key", no_argument, 0, 'K'},
                                       {0, 0, 0, 0}};
    const char *data = "./var", *to = NULL, *store = NULL, *akey = NULL;
    int c, rc = 0, with_key = 0;
    if (cli_wants_help(argc, argv)) {
        fputs(backup_usage, stdout);
        return CLI_OK;
    }
    optind = 1;
    while ((c = cli_getopt(argc, argv, lo, "backup", &rc)) != -1) {
        switch (c) {
        case 'd': data = optarg; break;
        case 't': to = optarg; break;
        case 's': store = optarg; break;
        case 'k': akey = optarg; with_key = 1; break;
        case 'K': with_key = 1; break;
        default: return rc;
        }
    }
    if (optind < argc) return cli_error(CLI_USAGE, "backup: unexpected argument '%s'", argv[optind]);
    if (store && store_url_is_pg(store))
        return cli_error(CLI_USAGE, "backup: a PostgreSQL store is backed up with pg_dump "
                                    "(docs/operations.md)");
    if (store)
        return cli_error(CLI_USAGE, "backup: give the server's --data DIR (the keys and the "
                                    "checkpoint file live there too)");
    if (!to || !*to) return cli_error(CLI_USAGE, "backup: --to FILE is required");
    if (strlen(to) > ARG_MAX_LEN || strlen(data) > ARG_MAX_LEN || (akey && strlen(akey) > ARG_MAX_LEN))
        return cli_error(CLI_USAGE, "backup: path too long");
    return do_backup(ctx, data, to, with_key, akey);
}

/* ---------------------------------------------------------------- restore */

/* 1 when `dir` has an entry besides . and .., 0 when it is empty or absent, -1 unreadable. */
static int dir_has_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? 0 : -1;
    struct dirent *e;
    int any = 0;
    while (!any && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) any = 1;
    closedir(d);
    return any;
}

static int mkdirs(const char *path, mode_t mode) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(buf, mode) != 0 && errno != EEXIST ? -1 : 0;
}

/* The key file at `path` signs for the public key at `pub`?  GP_OK, else an error. */
static int key_matches(const char *path, const char *pub, gp_err *err) {
    unsigned char sk[crypto_sign_SECRETKEYBYTES];
    char kid[AUDIT_KEY_HEX], pid[AUDIT_KEY_HEX];
    int created = 0;
    int rc = audit_key_load(path, 0, sk, kid, &created, err);
    sodium_memzero(sk, sizeof sk);
    if (!rc) rc = audit_pubkey_read(pub, pid, err);
    if (!rc && strcmp(kid, pid) != 0)
        rc = gp_err_set(err, GP_EINVALID, "the audit key %s is not the key of the backup's "
                                          "public key %.16s…",
                        path, pid);
    return rc;
}

static int do_restore(cli_ctx *ctx, const char *from, const char *data, const char *akey) {
    gp_err err = GP_ERR_INIT;
    int has = dir_has_entries(data);
    if (has < 0) return cli_error(CLI_FAIL, "restore: cannot read %s: %s", data, strerror(errno));
    if (has)
        return cli_error(CLI_FAIL, "restore: %s is not empty: restore into a new folder (an "
                                   "existing data folder is never overwritten)",
                         data);
    FILE *in = fopen(from, "rb");
    if (!in) return cli_error(CLI_FAIL, "restore: cannot read %s: %s", from, strerror(errno));
    if (mkdirs(data, 0700) != 0) {
        fclose(in);
        return cli_error(CLI_FAIL, "restore: cannot create %s: %s", data, strerror(errno));
    }
    int rc = GP_OK, got[NMEMBERS] = {0}, version = -1;
    char name[101], p[PATH_LEN];
    uint64_t size;
    for (int n = 0; !rc; n++) {
        int t = tar_next(in, name, &size);
        if (t == 0) break;
        int m = -1;
        for (int i = 0; t > 0 && i < NMEMBERS; i++)
            if (strcmp(name, members[i].name) == 0) m = i;
        if (t < 0 || m < 0 || got[m] || (n == 0) != (m == 0)) {
            rc = gp_err_set(&err, GP_EINVALID, "%s is not a gpupool backup (%s)", from,
                            t < 0 ? "not a tar archive, or a damaged one"
                            : m < 0 ? "an unexpected member"
                                    : "members out of order");
            break;
        }
        if (m == 0) { /* the manifest, read into memory and checked */
            if (size > 65536) {
                rc = gp_err_set(&err, GP_EINVALID, "%s: manifest too large", from);
                break;
            }
            char *text = calloc(1, (size_t)size + 1);
            if (!text || fread(text, 1, (size_t)size, in) != size) {
                free(text);
                rc = gp_err_set(&err, GP_EIO, "%s: cut short", from);
                break;
            }
            json_t *man = json_loads(text, 0, NULL);
            free(text);
            const char *fmt = json_string_value(json_object_get(man, "format"));
            if (!fmt || strcmp(fmt, FORMAT) != 0) {
                rc = gp_err_set(&err, GP_EINVALID, "%s: not a %s manifest", from, FORMAT);
            } else {
                version = (int)json_integer_value(json_object_get(man, "schema_version"));
            }
            json_decref(man);
            if (!rc && fseeko(in, (off_t)((512 - size % 512) % 512), SEEK_CUR) != 0)
                rc = gp_err_set(&err, GP_EIO, "%s: cut short", from);
            got[m] = 1;
            continue;
        }
        join3(p, data, members[m].name);
        int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, (mode_t)members[m].mode);
        FILE *out = fd >= 0 ? fdopen(fd, "wb") : NULL;
        if (!out) {
            if (fd >= 0) close(fd);
            rc = gp_err_set(&err, GP_EIO, "cannot create %s: %s", p, strerror(errno));
            break;
        }
        got[m] = 1;
        int c = copy_bytes(in, out, size);
        if (c == -1) rc = gp_err_set(&err, GP_EIO, "%s: cut short in %s", from, name);
        else if (c) rc = gp_err_set(&err, GP_EIO, "cannot write %s", p);
        if ((fflush(out) != 0 || fsync(fileno(out)) != 0) && !rc)
            rc = gp_err_set(&err, GP_EIO, "cannot write %s: %s", p, strerror(errno));
        if (fclose(out) != 0 && !rc) rc = gp_err_set(&err, GP_EIO, "cannot write %s", p);
        if (!rc && fseeko(in, (off_t)((512 - size % 512) % 512), SEEK_CUR) != 0)
            rc = gp_err_set(&err, GP_EIO, "%s: cut short", from);
    }
    fclose(in);
    for (int i = 0; !rc && i < NMEMBERS; i++)
        if (members[i].required && !got[i])
            rc = gp_err_set(&err, GP_EINVALID, "%s: no %s in it (cut short?)", from,
                            members[i].name);
    /* the signing key: from the backup, or given, and always the public key's */
    char pub[PATH_LEN], key[PATH_LEN];
    join3(pub, data, members[2].name);
    join3(key, data, members[3].name);
    if (!rc && got[3] && akey)
        rc = gp_err_set(&err, GP_EINVALID, "the backup holds its audit key: no --audit-key");
    if (!rc && !got[3] && got[2] && !akey)
        rc = gp_err_set(&err, GP_EINVALID, "the backup holds no audit signing key (made without "
                                           "--include-key): give it with --audit-key KEYFILE "
                                           "(else a new key would sign, and the old checkpoints "
                                           "would no longer verify)");
    if (!rc && akey && !got[2])
        rc = gp_err_set(&err, GP_EINVALID, "the backup has no audit public key to check "
                                           "--audit-key against");
    if (!rc && akey && !(rc = key_matches(akey, pub, &err))) {
        rc = copy_file(akey, key, 0, &err);
        if (!rc) got[3] = 1;
    } else if (!rc && got[3]) {
        rc = key_matches(key, pub, &err);
    }
    if (rc) { /* leave the folder as it was: empty */
        for (int i = 1; i < NMEMBERS; i++) {
            join3(p, data, members[i].name);
            unlink(p); /* the folder was empty: every member file is this restore's */
        }
        return cli_error(CLI_FAIL, "restore: %s", err.msg);
    }
    fsync_path(data, 1);
    if (ctx->json) {
        json_t *j = json_pack("{s:s,s:s,s:i,s:[]}", "from", from, "data", data, "schema_version",
                              version, "files");
        for (int i = 1; j && i < NMEMBERS; i++)
            if (got[i]) json_array_append_new(json_object_get(j, "files"), json_string(members[i].name));
        cli_print_object(ctx, j);
        json_decref(j);
    } else {
        printf("restored %s into %s (schema version %d):", from, data, version);
        for (int i = 1; i < NMEMBERS; i++)
            if (got[i]) printf(" %s", members[i].name);
        printf("\nnext: gpupool check --data %s, then gpupool server --data %s\n", data, data);
    }
    return CLI_OK;
}

int cli_cmd_restore(cli_ctx *ctx, int argc, char **argv) {
    static const struct option lo[] = {{"from", required_argument, 0, 'f'},
                                       {"data", required_argument, 0, 'd'},
                                       {"audit-key", required_argument, 0, 'k'},
                                       {0, 0, 0, 0}};
    const char *from = NULL, *data = NULL, *akey = NULL;
    int c, rc = 0;
    if (cli_wants_help(argc, argv)) {
        fputs(restore_usage, stdout);
        return CLI_OK;
    }
    optind = 1;
    while ((c = cli_getopt(argc, argv, lo, "restore", &rc)) != -1) {
        switch (c) {
        case 'f': from = optarg; break;
        case 'd': data = optarg; break;
        case 'k': akey = optarg; break;
        default: return rc;
        }
    }
    if (optind < argc)
        return cli_error(CLI_USAGE, "restore: unexpected argument '%s'", argv[optind]);
    if (!from || !*from || !data || !*data)
        return cli_error(CLI_USAGE, "restore: --from FILE and --data DIR are required");
    if (strlen(data) > ARG_MAX_LEN) return cli_error(CLI_USAGE, "restore: path too long");
    return do_restore(ctx, from, data, akey);
}
