/*
 * fuzz_sse.c - libFuzzer target: the gateway's stream filter
 * (gw_sse_feed / gw_sse_finish, src/gateway/gateway.h), which reads a
 * model server's server-sent events on their way to the client.
 *
 * Input: byte 0 picks strip_usage; bytes 1..8 seed the split points; the
 * rest is the upstream stream.  The stream is fed once whole, then again in
 * pieces of pseudo-random sizes (1..64 bytes, the split seed), then one
 * byte at a time.  Invariants: the client gets the same bytes and the
 * filter the same counts (usage, [DONE], errors, events, characters)
 * however the upstream's bytes were chunked; without strip_usage every
 * event passes unchanged, so the output is the input, byte for byte.
 */
#include "../../src/gateway/gateway.h"

#include <assert.h>
#include <stdint.h>
#include <string.h>

typedef struct run {
    strbuf out;
    gw_sse s;
} run;

/* Feed `data` in pieces sized by `seed` (0: whole; 1: single bytes). */
static void feed(run *r, int strip, const uint8_t *data, size_t n, uint64_t seed) {
    sb_init(&r->out);
    gw_sse_init(&r->s, strip);
    size_t i = 0;
    while (i < n) {
        size_t k = n - i;
        if (seed == 1) {
            k = 1;
        } else if (seed) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            size_t want = 1 + (size_t)((seed >> 33) % 64);
            if (want < k) k = want;
        }
        gw_sse_feed(&r->s, (const char *)data + i, k, &r->out);
        i += k;
    }
    gw_sse_finish(&r->s, &r->out);
    assert(sb_ok(&r->out));
}

static void same(const run *a, const run *b) {
    assert(a->out.len == b->out.len && memcmp(a->out.buf, b->out.buf, a->out.len) == 0);
    assert(a->s.has_usage == b->s.has_usage && a->s.saw_done == b->s.saw_done &&
           a->s.saw_error == b->s.saw_error);
    assert(a->s.prompt_tokens == b->s.prompt_tokens &&
           a->s.completion_tokens == b->s.completion_tokens);
    assert(a->s.completion_chars == b->s.completion_chars && a->s.events == b->s.events);
}

static void release(run *r) {
    gw_sse_release(&r->s);
    sb_release(&r->out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 9) return 0;
    int strip = data[0] & 1;
    uint64_t seed = 0;
    memcpy(&seed, data + 1, 8);
    seed |= 2; /* never 0 or 1: those are the whole and bytewise runs */
    data += 9;
    size -= 9;

    run whole, split, bytes;
    feed(&whole, strip, data, size, 0);
    feed(&split, strip, data, size, seed);
    feed(&bytes, strip, data, size, 1);
    same(&whole, &split);
    same(&whole, &bytes);
    assert(whole.s.pending.len == 0);
    if (!strip) assert(whole.out.len == size && memcmp(whole.out.buf, data, size) == 0);
    release(&whole);
    release(&split);
    release(&bytes);
    return 0;
}
