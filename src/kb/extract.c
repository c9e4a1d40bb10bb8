/*
 * extract.c - an uploaded document into text and chunks (see kb.h).
 *
 * text and markdown are indexed as written (markup characters are not
 * words to the tokenizer); HTML goes through kb_html_to_text(); a PDF is
 * decoded from base64, written to a private temporary file and read by
 * Debian's `pdftotext` (poppler-utils), started with posix_spawnp (no
 * shell, stdin /dev/null, stderr discarded) and given PDF_TIMEOUT_S.  No
 * store access: callers prepare a document before opening the write
 * transaction that stores it.
 */
#include "kb.h"

#include "../core/jsonx.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sodium.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define PDF_TIMEOUT_S 30
#define PDF_MAX_TEXT (32u << 20)

int kb_pdf_available(void) {
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/bin:/bin";
    char dir[1024];
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, ":");
        if (n && n < sizeof dir - 16) {
            snprintf(dir, sizeof dir, "%.*s/pdftotext", (int)n, p);
            if (access(dir, X_OK) == 0) return 1;
        }
        p += n;
        if (*p == ':') p++;
    }
    return 0;
}

static int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Run pdftotext on `pdf` (n bytes); its UTF-8 output into `text`. */
static int pdf_text(const unsigned char *pdf, size_t n, strbuf *text, gp_err *err) {
    if (!kb_pdf_available())
        return gp_err_set(err, GP_EUNSUPPORTED,
                          "PDF documents need pdftotext (poppler-utils) on the server");
    const char *tmpdir = getenv("TMPDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/gpupool-kb-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) return gp_err_set(err, GP_EIO, "temporary file: %s", strerror(errno));
    size_t w = 0;
    while (w < n) {
        ssize_t k = write(fd, pdf + w, n - w);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            close(fd);
            unlink(path);
            return gp_err_set(err, GP_EIO, "temporary file: %s", strerror(errno));
        }
        w += (size_t)k;
    }
    close(fd);
    int pfd[2];
    if (pipe(pfd)) {
        unlink(path);
        return gp_err_set(err, GP_EIO, "pipe: %s", strerror(errno));
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addclose(&fa, pfd[0]);
    posix_spawn_file_actions_addclose(&fa, pfd[1]);
    char *argv[] = {"pdftotext", "-q", "-enc", "UTF-8", "-eol", "unix", path, "-", NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, "pdftotext", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(pfd[1]);
    if (rc) {
        close(pfd[0]);
        unlink(path);
        return gp_err_set(err, GP_EUNSUPPORTED, "cannot run pdftotext: %s", strerror(rc));
    }
    int64_t deadline = mono_ms() + PDF_TIMEOUT_S * 1000;
    int failed = 0;
    char buf[16384];
    for (;;) {
        int64_t left = deadline - mono_ms();
        if (left <= 0) {
            failed = 1;
            break;
        }
        struct pollfd p = {pfd[0], POLLIN, 0};
        int pr = poll(&p, 1, (int)left);
        if (pr < 0 && errno == EINTR) continue;
        if (pr <= 0) {
            failed = 1;
            break;
        }
        ssize_t k = read(pfd[0], buf, sizeof buf);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        if (text->len + (size_t)k > PDF_MAX_TEXT) {
            failed = 2;
            break;
        }
        sb_add(text, buf, (size_t)k);
    }
    close(pfd[0]);
    if (failed) kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    unlink(path);
    if (failed == 1) return gp_err_set(err, GP_EINVALID, "pdftotext took longer than %d s", PDF_TIMEOUT_S);
    if (failed == 2) return gp_err_set(err, GP_ETOOLARGE, "the PDF's text is too large");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return gp_err_set(err, GP_EINVALID, "pdftotext could not read the PDF (exit %d)",
                          WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    /* pages are separated by form feeds: make them paragraph breaks */
    for (size_t i = 0; i < text->len; i++)
        if (text->buf[i] == '\f') text->buf[i] = '\n';
    return GP_OK;
}

void kb_doc_input_release(kb_doc_input *in) {
    if (!in) return;
    sb_release(&in->text);
    free(in->spans);
    in->spans = NULL;
    in->nspans = 0;
}

int kb_doc_prepare(json_t *spec, kb_doc_input *out, gp_err *err) {
    static const char *const fields[] = {"name", "format", "content", NULL};
    const char *name, *format, *content;
    memset(out, 0, sizeof *out);
    sb_init(&out->text);
    int rc = jx_only_fields(spec, fields, err);
    if (!rc) rc = jx_get_str(spec, "name", 1, &name, err);
    if (!rc && !kb_doc_name_valid(name))
        rc = gp_err_set(err, GP_EINVALID,
                        "document name must be 1-%d of A-Z a-z 0-9 . _ - (not starting with '.')",
                        KB_DOC_NAME_MAX);
    if (!rc) rc = jx_get_str(spec, "format", 0, &format, err);
    if (!rc) rc = jx_get_str(spec, "content", 1, &content, err);
    if (rc) return rc;
    if (!format) format = "text";
    size_t clen = json_string_length(json_object_get(spec, "content"));
    snprintf(out->name, sizeof out->name, "%s", name);
    snprintf(out->format, sizeof out->format, "%s", format);
    out->bytes = clen;
    if (!strcmp(format, "text") || !strcmp(format, "markdown") || !strcmp(format, "html")) {
        if (!kb_utf8_valid(content, clen))
            return gp_err_set(err, GP_EINVALID, "content must be UTF-8 text without NUL bytes");
        if (!strcmp(format, "html")) kb_html_to_text(content, clen, &out->text);
        else sb_add(&out->text, content, clen);
    } else if (!strcmp(format, "pdf")) {
        unsigned char *bin = malloc(clen / 4 * 3 + 4);
        size_t bl = 0;
        if (!bin) return gp_err_set(err, GP_ENOMEM, NULL);
        if (sodium_base642bin(bin, clen / 4 * 3 + 4, content, clen, " \t\r\n", &bl, NULL,
                              sodium_base64_VARIANT_ORIGINAL) != 0 &&
            sodium_base642bin(bin, clen / 4 * 3 + 4, content, clen, " \t\r\n", &bl, NULL,
                              sodium_base64_VARIANT_ORIGINAL_NO_PADDING) != 0) {
            free(bin);
            return gp_err_set(err, GP_EINVALID, "a pdf's content must be base64 of the file");
        }
        if (bl < 5 || memcmp(bin, "%PDF-", 5) != 0) {
            free(bin);
            return gp_err_set(err, GP_EINVALID, "content is not a PDF file (no %%PDF- header)");
        }
        out->bytes = bl;
        rc = pdf_text(bin, bl, &out->text, err);
        free(bin);
        if (rc) return rc;
        if (!kb_utf8_valid(out->text.buf, out->text.len))
            return gp_err_set(err, GP_EINVALID, "the PDF's text is not valid UTF-8");
    } else {
        return gp_err_set(err, GP_EUNSUPPORTED,
                          "format '%s' cannot be extracted: use text, markdown, html or pdf",
                          format);
    }
    if (!sb_ok(&out->text)) return gp_err_set(err, GP_ENOMEM, NULL);
    rc = kb_chunk(out->text.buf, out->text.len, KB_CHUNK_CHARS, KB_CHUNK_OVERLAP, &out->spans,
                  &out->nspans, err);
    if (rc) return rc;
    if (!out->nspans) return gp_err_set(err, GP_EINVALID, "the document has no text to index");
    return GP_OK;
}
