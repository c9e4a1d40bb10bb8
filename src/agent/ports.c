/*
 * ports.c - the TCP ports a workload's processes listen on (see ports.h).
 *
 * One pass: the listening sockets of /proc/net/tcp and tcp6 (inode, owner
 * uid, port), then every /proc/<pid>: its session from stat, and, for a
 * process in a wanted session, the socket inodes among its open files.
 */
#include "ports.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SOCKS_MAX 65536 /* listening sockets considered per node, at most */

void ports_add(int *port, int *n, int p) {
    int i = 0;
    while (i < *n && port[i] < p) i++;
    if (i < *n && port[i] == p) return;
    if (*n == PORTS_MAX) {
        if (i == PORTS_MAX) return; /* higher than every kept one */
        (*n)--;                      /* drop the highest */
    }
    memmove(port + i + 1, port + i, (size_t)(*n - i) * sizeof *port);
    port[i] = p;
    (*n)++;
}

int ports_parse_listen(const char *text, ports_sock *out, int *n, int max) {
    int added = 0;
    const char *line = text;
    while (line && *line && *n < max) {
        const char *eol = strchr(line, '\n');
        char buf[512];
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        if (len < sizeof buf) {
            memcpy(buf, line, len);
            buf[len] = '\0';
            unsigned port, st;
            long long uid;
            unsigned long long inode;
            /* sl: local:port remote:port st tx:rx tr:when retrnsmt uid timeout inode */
            if (sscanf(buf, " %*d: %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x %*x:%*x %*x:%*x %*x %lld %*d %llu",
                       &port, &st, &uid, &inode) == 4 &&
                st == 0x0A && port > 0 && port < 65536 && inode) {
                out[*n].inode = inode;
                out[*n].uid = uid;
                out[*n].port = (int)port;
                (*n)++;
                added++;
            }
        }
        line = eol ? eol + 1 : NULL;
    }
    return added;
}

/* The whole of a small /proc file, NUL-terminated (NULL when it cannot be read). */
static char *slurp(const char *path, size_t cap) {
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    size_t n = 0, sz = 8192;
    char *b = malloc(sz);
    while (b) {
        size_t got = fread(b + n, 1, sz - n - 1, f);
        n += got;
        if (got == 0 || n >= cap) break;
        if (n + 1 >= sz) {
            char *nb = realloc(b, sz * 2);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            sz *= 2;
        }
    }
    fclose(f);
    if (b) b[n] = '\0';
    return b;
}

/* The session of a process, from /proc/<pid>/stat (-1 when unknown). */
static pid_t session_of(const char *proc, const char *pid) {
    char path[300], buf[1024];
    snprintf(path, sizeof path, "%s/%s/stat", proc, pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
    int ppid, pgrp, sid;
    char st;
    if (!p || sscanf(p + 1, " %c %d %d %d", &st, &ppid, &pgrp, &sid) != 4) return -1;
    return (pid_t)sid;
}

static const ports_sock *find_inode(const ports_sock *s, int n, unsigned long long ino) {
    for (int i = 0; i < n; i++)
        if (s[i].inode == ino) return &s[i];
    return NULL;
}

void ports_of_owners(const char *proc, ports_owner *owners, int nowners) {
    for (int i = 0; i < nowners; i++) owners[i].n = 0;
    if (nowners <= 0) return;
    ports_sock *socks = malloc(sizeof *socks * SOCKS_MAX);
    int ns = 0;
    if (!socks) return;
    const char *files[] = {"net/tcp", "net/tcp6"};
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
        char path[300];
        snprintf(path, sizeof path, "%s/%s", proc, files[k]);
        char *t = slurp(path, (size_t)64 << 20);
        if (t) ports_parse_listen(t, socks, &ns, SOCKS_MAX);
        free(t);
    }
    if (!ns) {
        free(socks);
        return;
    }
    /* owned by a workload's own uid */
    for (int i = 0; i < nowners; i++) {
        if (owners[i].uid < 0) continue;
        for (int k = 0; k < ns; k++)
            if (socks[k].uid == owners[i].uid) ports_add(owners[i].port, &owners[i].n, socks[k].port);
    }
    /* held open by a process of a workload's session */
    DIR *d = opendir(proc);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (!isdigit((unsigned char)de->d_name[0])) continue;
        pid_t sid = session_of(proc, de->d_name);
        int who = -1;
        for (int i = 0; i < nowners && who < 0; i++)
            if (sid > 0 && owners[i].sid == sid) who = i;
        if (who < 0) continue;
        char fdp[300];
        snprintf(fdp, sizeof fdp, "%s/%s/fd", proc, de->d_name);
        DIR *fd = opendir(fdp);
        struct dirent *fe;
        while (fd && (fe = readdir(fd))) {
            if (fe->d_name[0] == '.') continue;
            char lp[600], target[64];
            snprintf(lp, sizeof lp, "%s/%s", fdp, fe->d_name);
            ssize_t len = readlink(lp, target, sizeof target - 1);
            if (len <= 0) continue;
            target[len] = '\0';
            unsigned long long ino;
            if (sscanf(target, "socket:[%llu]", &ino) != 1) continue;
            const ports_sock *s = find_inode(socks, ns, ino);
            if (s) ports_add(owners[who].port, &owners[who].n, s->port);
        }
        if (fd) closedir(fd);
    }
    if (d) closedir(d);
    free(socks);
}

int ports_pick(const ports_sock *listening, int nl, const int *avoid, int navoid, int lo, int hi,
               unsigned seed, int (*usable)(int port)) {
    if (lo < 1 || hi > 65536 || hi <= lo) return -1;
    int span = hi - lo;
    for (int i = 0; i < span; i++) {
        int p = lo + (int)((seed + (unsigned)i) % (unsigned)span), taken = 0;
        for (int k = 0; k < nl && !taken; k++) taken = listening[k].port == p;
        for (int k = 0; k < navoid && !taken; k++) taken = avoid[k] == p;
        if (!taken && (!usable || usable(p))) return p;
    }
    return -1;
}

/* Can a TCP socket be bound to `port` on every IPv4 address now? */
static int bindable(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons((unsigned short)port);
    int ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

int ports_pick_free(const char *proc, const int *avoid, int navoid, int lo, int hi, unsigned seed) {
    ports_sock *socks = malloc(sizeof *socks * SOCKS_MAX);
    int ns = 0;
    if (!socks) return -1;
    const char *files[] = {"net/tcp", "net/tcp6"};
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
        char path[300];
        snprintf(path, sizeof path, "%s/%s", proc, files[k]);
        char *t = slurp(path, (size_t)64 << 20);
        if (t) ports_parse_listen(t, socks, &ns, SOCKS_MAX);
        free(t);
    }
    int p = ports_pick(socks, ns, avoid, navoid, lo, hi, seed, bindable);
    free(socks);
    return p;
}
