/*
 * ports.h - which TCP ports a workload's own processes listen on, read from
 * Linux /proc.  Internal to src/agent/.
 *
 * The node reports these with each running workload; the gateway routes a
 * job-backed endpoint only to a port its job listens on, so one tenant's
 * endpoint can never name another tenant's job server on a shared node
 * (docs/security.md, "Jobs and nodes").
 *
 * A listening socket belongs to a workload when a process of the workload's
 * session (the runner starts each workload as a session leader) holds it
 * open, or, for workloads that run as a uid of their own, when the socket's
 * owner uid is that uid (a process that left the session still counts).
 * Nothing else can make a port count: a job cannot hold another job's
 * socket.
 */
#ifndef GP_PORTS_H
#define GP_PORTS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PORTS_MAX 16 /* ports reported per workload, at most (the lowest ones) */

/* One listening socket of /proc/net/tcp or tcp6. */
typedef struct ports_sock {
    unsigned long long inode;
    long long uid;
    int port;
} ports_sock;

/*
 * Parses the text of /proc/net/tcp or /proc/net/tcp6 and appends each socket
 * in the LISTEN state to out[*n] (at most max in all).  Lines that do not
 * parse are skipped.  Returns how many were appended.  Pure.
 */
int ports_parse_listen(const char *text, ports_sock *out, int *n, int max);

/* A workload to find the ports of: in the session of `sid`, or owned by `uid` (-1: none). */
typedef struct ports_owner {
    pid_t sid;
    long long uid;
    int n;               /* out: how many ports */
    int port[PORTS_MAX]; /* out: ascending, distinct */
} ports_owner;

/*
 * Fills each owner's ports from /proc (all of them in one pass over the
 * processes).  An owner with no port gets n = 0; a /proc that cannot be read
 * leaves every n at 0.  `proc` is the proc root ("/proc"; tests pass another).
 */
void ports_of_owners(const char *proc, ports_owner *owners, int nowners);

/*
 * Adds `port` to the ascending, distinct list port[*n] of capacity PORTS_MAX
 * (a full list keeps its lowest ones).  Pure.
 */
void ports_add(int *port, int *n, int p);

/*
 * The rendezvous port of a job that spans nodes (MASTER_PORT), on its rank 0's node: a port
 * of [lo, hi) that no socket of `listening` (ports_parse_listen's) listens on and that is not
 * in avoid[navoid] (the ports this agent already gave jobs), trying from lo + seed % (hi - lo)
 * upwards, wrapping.  `usable` (NULL: any) says whether a candidate can be bound now.  The
 * port, or -1 when none is left.  Pure but for `usable`.
 */
int ports_pick(const ports_sock *listening, int nl, const int *avoid, int navoid, int lo, int hi,
               unsigned seed, int (*usable)(int port));

/* ports_pick over the sockets of `proc`/net/tcp and tcp6 listening now, a candidate usable when
 * a TCP socket can be bound to it on every address. */
int ports_pick_free(const char *proc, const int *avoid, int navoid, int lo, int hi, unsigned seed);

#define PORTS_RDV_LO 29500 /* the rendezvous ports: torchrun's default and the 1,000 above it, */
#define PORTS_RDV_HI 30500 /* below Linux's ephemeral range (32768-) */

#endif
