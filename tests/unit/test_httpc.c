/*
 * test_httpc.c - the HTTP client's server lists: parsing "URL1,URL2" and the
 * failover rules of httpc_json_failover() against loopback listeners that
 * answer, hang up without answering, or are not there at all.
 *
 * A listener runs in its own thread and never asserts (cmocka asserts belong
 * to the test's thread); it only counts the connections it accepted.
 */
#include "testutil.h"

#include "../../src/core/httpc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/time.h>

/* ---- parsing ---- */

static void parse_lists(void **state) {
    (void)state;
    gp_err err = GP_ERR_INIT;
    httpc_servers s = HTTPC_SERVERS_INIT;
    assert_int_equal(httpc_servers_parse("http://127.0.0.1:7070", &s, &err), GP_OK);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.cur, 0);
    assert_string_equal(s.urls[0], "http://127.0.0.1:7070");
    /* blanks around elements go; the list replaces what `s` held */
    assert_int_equal(httpc_servers_parse(" http://a:1/ ,\tHTTPS://b.example ,http://c", &s, &err),
                     GP_OK);
    assert_int_equal(s.n, 3);
    assert_string_equal(s.urls[0], "http://a:1/");
    assert_string_equal(s.urls[1], "HTTPS://b.example");
    assert_string_equal(s.urls[2], "http://c");
    httpc_servers_release(&s);
    assert_int_equal(s.n, 0);
    assert_null(s.urls);
    httpc_servers_release(&s); /* twice is harmless */
    httpc_servers_release(NULL);
}

static void parse_errors(void **state) {
    (void)state;
    static const struct {
        const char *list, *msg;
    } bad[] = {
        {"", "the server address is empty"},
        {"  ", "the server address is empty"},
        {"http://a,,http://b", "address 2 of the server list 'http://a,,http://b' is empty"},
        {"http://a,", "address 2 of the server list 'http://a,' is empty"},
        {",http://a", "address 1 of the server list ',http://a' is empty"},
        {"http://a, ", "address 2 of the server list 'http://a, ' is empty"},
        {"127.0.0.1:7070", "server address '127.0.0.1:7070' is not an http:// or https:// URL"},
        {"http://a,ftp://b", "server address 'ftp://b' is not an http:// or https:// URL"},
        {"http://", "server address 'http://' is not an http:// or https:// URL"},
        {"https:///x", "server address 'https:///x' is not an http:// or https:// URL"},
        {"http://a b", "server address 'http://a b' is not an http:// or https:// URL"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gp_err err = GP_ERR_INIT;
        httpc_servers s = HTTPC_SERVERS_INIT;
        assert_int_equal(httpc_servers_parse("http://kept", &s, &err), GP_OK);
        assert_int_equal(httpc_servers_parse(bad[i].list, &s, &err), GP_EINVALID);
        assert_string_equal(err.msg, bad[i].msg);
        assert_null(strchr(err.msg, '\n'));
        /* a failed parse leaves the list empty */
        assert_int_equal(s.n, 0);
        assert_null(s.urls);
    }
    gp_err err = GP_ERR_INIT;
    httpc_servers s = HTTPC_SERVERS_INIT;
    assert_int_equal(httpc_servers_parse(NULL, &s, &err), GP_EINVALID);
}

/* ---- loopback listeners ---- */

enum { ANSWER_503, HANG_UP, SILENT };

typedef struct listener {
    int fd, mode, port;
    atomic_int accepted;
    atomic_int stop;
    pthread_t thread;
    char url[64];
} listener;

/* Read until the end of the request headers (or EOF, or 2 s of silence). */
static void read_headers(int c) {
    char buf[8192];
    size_t have = 0;
    while (have < sizeof buf - 1) {
        ssize_t n = recv(c, buf + have, sizeof buf - 1 - have, 0);
        if (n <= 0) return;
        have += (size_t)n;
        buf[have] = '\0';
        if (strstr(buf, "\r\n\r\n")) return;
    }
}

static void *serve(void *arg) {
    listener *l = arg;
    static const char answer[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: "
                                 "application/json\r\nContent-Length: 13\r\nConnection: "
                                 "close\r\n\r\n{\"busy\":true}";
    for (;;) {
        int c = accept(l->fd, NULL, NULL);
        if (c < 0 || atomic_load(&l->stop)) {
            if (c >= 0) close(c);
            return NULL;
        }
        atomic_fetch_add(&l->accepted, 1);
        struct timeval tv = {2, 0};
        setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        read_headers(c);
        if (l->mode == ANSWER_503) {
            ssize_t w = send(c, answer, sizeof answer - 1, MSG_NOSIGNAL);
            (void)w;
            shutdown(c, SHUT_WR);
            char sink[4096];
            while (recv(c, sink, sizeof sink, 0) > 0) {
            }
        } else if (l->mode == SILENT) {
            /* a hung server: hold the connection, answer nothing, until the client gives up */
            char sink[4096];
            for (;;) {
                ssize_t n = recv(c, sink, sizeof sink, 0);
                if (n == 0 || atomic_load(&l->stop)) break;
                if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) break;
            }
        }
        close(c);
    }
}

/* A loopback socket bound to a free port; listening when `listen_too`. */
static int bound_socket(int listen_too, int *port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    if (listen_too) assert_int_equal(listen(fd, 16), 0);
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

static void listener_start(listener *l, int mode) {
    memset(l, 0, sizeof *l);
    l->mode = mode;
    l->fd = bound_socket(1, &l->port);
    snprintf(l->url, sizeof l->url, "http://127.0.0.1:%d", l->port);
    assert_int_equal(pthread_create(&l->thread, NULL, serve, l), 0);
}

static void listener_stop(listener *l) {
    atomic_store(&l->stop, 1);
    /* wake the accept() with one last connection */
    int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(c >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)l->port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(c, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(pthread_join(l->thread, NULL), 0);
    close(c);
    close(l->fd);
}

/* An address where nobody listens: a port bound (not listening) and then released. */
static void dead_url(char out[64]) {
    int port, fd = bound_socket(0, &port);
    close(fd);
    snprintf(out, 64, "http://127.0.0.1:%d", port);
}

static httpc_servers list_of(const char *a, const char *b) {
    char buf[160];
    gp_err err = GP_ERR_INIT;
    httpc_servers s = HTTPC_SERVERS_INIT;
    snprintf(buf, sizeof buf, "%s,%s", a, b);
    assert_int_equal(httpc_servers_parse(buf, &s, &err), GP_OK);
    return s;
}

/* ---- failover ---- */

static void fails_over_when_refused(void **state) {
    (void)state;
    listener up;
    char dead[64];
    listener_start(&up, ANSWER_503);
    dead_url(dead);
    httpc_servers s = list_of(dead, up.url);
    gp_err err = GP_ERR_INIT;
    json_t *resp;
    long status;
    /* never sent: even a POST goes on to the next server */
    json_t *body = json_pack("{s:s}", "name", "x");
    assert_int_equal(httpc_json_failover(&s, "/api/v1/tenants", "POST", "tok", body, 5, &status,
                                         &resp, &err),
                     GP_OK);
    json_decref(body);
    assert_int_equal(status, 503); /* an answer, whatever its status */
    assert_true(json_is_true(json_object_get(resp, "busy")));
    json_decref(resp);
    assert_int_equal(s.cur, 1);
    assert_int_equal(atomic_load(&up.accepted), 1);
    /* the next call starts with the server that answered */
    assert_int_equal(httpc_json_failover(&s, "/healthz", "GET", NULL, NULL, 5, &status, &resp,
                                         &err),
                     GP_OK);
    json_decref(resp);
    assert_int_equal(s.cur, 1);
    assert_int_equal(atomic_load(&up.accepted), 2);
    httpc_servers_release(&s);
    listener_stop(&up);
}

static void an_answer_is_never_retried(void **state) {
    (void)state;
    listener a, b;
    listener_start(&a, ANSWER_503);
    listener_start(&b, ANSWER_503);
    httpc_servers s = list_of(a.url, b.url);
    gp_err err = GP_ERR_INIT;
    json_t *resp;
    long status;
    assert_int_equal(httpc_json_failover(&s, "/readyz", "GET", NULL, NULL, 5, &status, &resp,
                                         &err),
                     GP_OK);
    json_decref(resp);
    assert_int_equal(status, 503);
    assert_int_equal(s.cur, 0);
    assert_int_equal(atomic_load(&a.accepted), 1);
    assert_int_equal(atomic_load(&b.accepted), 0);
    httpc_servers_release(&s);
    listener_stop(&a);
    listener_stop(&b);
}

static void hang_up_retries_get_only(void **state) {
    (void)state;
    listener mute, up;
    listener_start(&mute, HANG_UP);
    listener_start(&up, ANSWER_503);
    httpc_servers s = list_of(mute.url, up.url);
    gp_err err = GP_ERR_INIT;
    json_t *resp;
    long status;
    /* GET: the connection broke before any answer, so the next server gets it */
    assert_int_equal(httpc_json_failover(&s, "/api/v1/tenants", "GET", NULL, NULL, 5, &status,
                                         &resp, &err),
                     GP_OK);
    json_decref(resp);
    assert_int_equal(status, 503);
    assert_int_equal(s.cur, 1);
    assert_int_equal(atomic_load(&mute.accepted), 1);
    assert_int_equal(atomic_load(&up.accepted), 1);
    /* POST (and PUT, DELETE): the server may have applied it, so it is not sent again */
    static const char *const methods[] = {"POST", "PUT", "DELETE", "PATCH"};
    for (size_t i = 0; i < 4; i++) {
        s.cur = 0;
        json_t *body = json_object();
        assert_int_equal(httpc_json_failover(&s, "/api/v1/tenants", methods[i], NULL, body, 5,
                                             &status, &resp, &err),
                         GP_EIO);
        json_decref(body);
        assert_null(resp);
        assert_int_equal(status, 0);
        assert_int_equal(s.cur, 1); /* not asked first next time */
        assert_non_null(strstr(err.msg, mute.url));
        assert_non_null(strstr(err.msg, "not repeated on another server"));
        assert_null(strchr(err.msg, '\n'));
    }
    assert_int_equal(atomic_load(&mute.accepted), 5);
    assert_int_equal(atomic_load(&up.accepted), 1);
    httpc_servers_release(&s);
    listener_stop(&mute);
    listener_stop(&up);
}

/* A server that takes the request and never answers (hung, stopped). */
static void silence_moves_on(void **state) {
    (void)state;
    listener hung, up;
    listener_start(&hung, SILENT);
    listener_start(&up, ANSWER_503);
    httpc_servers s = list_of(hung.url, up.url);
    gp_err err = GP_ERR_INIT;
    json_t *resp;
    long status;
    /* GET: asked again of the next server once the timeout passed */
    assert_int_equal(httpc_json_failover(&s, "/api/v1/nodes", "GET", NULL, NULL, 1, &status,
                                         &resp, &err),
                     GP_OK);
    json_decref(resp);
    assert_int_equal(status, 503);
    assert_int_equal(s.cur, 1);
    assert_int_equal(atomic_load(&hung.accepted), 1);
    assert_int_equal(atomic_load(&up.accepted), 1);
    /* POST: not repeated, but the next call goes to the other server */
    s.cur = 0;
    json_t *body = json_object();
    assert_int_equal(httpc_json_failover(&s, "/api/v1/agent/heartbeat", "POST", "t", body, 1,
                                         &status, &resp, &err),
                     GP_EIO);
    assert_null(resp);
    assert_non_null(strstr(err.msg, hung.url));
    assert_non_null(strstr(err.msg, "POST not repeated on another server"));
    assert_int_equal(s.cur, 1);
    assert_int_equal(atomic_load(&up.accepted), 1);
    assert_int_equal(httpc_json_failover(&s, "/api/v1/agent/heartbeat", "POST", "t", body, 1,
                                         &status, &resp, &err),
                     GP_OK);
    json_decref(resp);
    json_decref(body);
    assert_int_equal(status, 503);
    assert_int_equal(atomic_load(&hung.accepted), 2); /* the GET and the POST, no more */
    assert_int_equal(atomic_load(&up.accepted), 2);
    httpc_servers_release(&s);
    listener_stop(&hung);
    listener_stop(&up);
}

static void all_dead_names_them(void **state) {
    (void)state;
    char d1[64], d2[64], want[200];
    dead_url(d1);
    dead_url(d2);
    httpc_servers s = list_of(d1, d2);
    s.cur = 1;
    gp_err err = GP_ERR_INIT;
    json_t *resp;
    long status;
    assert_int_equal(httpc_json_failover(&s, "/api/v1/whoami", "GET", "t", NULL, 5, &status,
                                         &resp, &err),
                     GP_EIO);
    assert_null(resp);
    assert_int_equal(s.cur, 1); /* unchanged */
    /* tried from the current one on, each once */
    snprintf(want, sizeof want, "cannot reach any server (tried %s, %s): ", d2, d1);
    assert_memory_equal(err.msg, want, strlen(want));
    assert_null(strchr(err.msg, '\n'));
    httpc_servers_release(&s);
    /* one server: the message of old */
    gp_err e1 = GP_ERR_INIT;
    assert_int_equal(httpc_servers_parse(d1, &s, &e1), GP_OK);
    assert_int_equal(httpc_json_failover(&s, "/x", "POST", NULL, NULL, 5, &status, &resp, &e1),
                     GP_EIO);
    snprintf(want, sizeof want, "cannot reach %s: ", d1);
    assert_memory_equal(e1.msg, want, strlen(want));
    httpc_servers_release(&s);
    /* an empty list is refused, not a crash */
    assert_int_equal(httpc_json_failover(&s, "/x", "GET", NULL, NULL, 5, &status, &resp, &e1),
                     GP_EINVALID);
}

int main(void) {
    if (httpc_global_init() != 0) {
        fputs("test_httpc: curl_global_init failed\n", stderr);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parse_lists),
        cmocka_unit_test(parse_errors),
        cmocka_unit_test(fails_over_when_refused),
        cmocka_unit_test(an_answer_is_never_retried),
        cmocka_unit_test(hang_up_retries_get_only),
        cmocka_unit_test(silence_moves_on),
        cmocka_unit_test(all_dead_names_them),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    httpc_global_cleanup();
    return rc;
}
