/*
 * fuzz_auth.c - libFuzzer target: the Authorization header parsers, the
 * API's (auth_bearer, src/auth/auth.h: user tokens) and the gateway's
 * (gw_bearer_key, src/gateway/gateway.h: API keys).
 *
 * Input: the header value (cut at the first NUL, as HTTP headers are).
 * Invariants:
 *   - auth_bearer: a result points into the header, after "bearer" (any
 *     case) and one or more spaces only; it is 1..200 printable, non-space
 *     characters running to the end;
 *   - gw_bearer_key: a result points after "Bearer " (any case) and spaces
 *     only, and does not start with a space;
 *   - whenever auth_bearer accepts, gw_bearer_key yields the same token.
 */
#include "../../src/auth/auth.h"
#include "../../src/gateway/gateway.h"

#include <assert.h>
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *h = malloc(size + 1);
    assert(h);
    memcpy(h, data, size);
    h[size] = '\0';
    size_t len = strlen(h);

    const char *tok = auth_bearer(h);
    if (tok) {
        assert(tok > h + 6 && tok <= h + len);
        assert(strncasecmp(h, "bearer ", 7) == 0);
        for (const char *p = h + 6; p < tok; p++) assert(*p == ' ');
        size_t tl = strlen(tok);
        assert(tl >= 1 && tl <= 200);
        for (size_t i = 0; i < tl; i++) assert(isgraph((unsigned char)tok[i]));
    }

    const char *key = gw_bearer_key(h);
    if (key) {
        assert(key >= h + 7 && key <= h + len);
        assert(strncasecmp(h, "Bearer ", 7) == 0);
        for (const char *p = h + 7; p < key; p++) assert(*p == ' ');
        assert(*key != ' ');
    } else {
        assert(len < 7 || strncasecmp(h, "Bearer ", 7) != 0);
    }
    if (tok) assert(key == tok);
    assert(gw_bearer_key(NULL) == NULL && auth_bearer(NULL) == NULL);
    free(h);
    return 0;
}
