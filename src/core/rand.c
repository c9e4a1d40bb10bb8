/*
 * rand.c - ids, secrets and secret hashing on top of libsodium (see rand.h).
 */
#include "rand.h"

#include <sodium.h>
#include <string.h>

int rnd_init(void) { return sodium_init() < 0 ? -1 : 0; }

void rnd_id(char out[RND_ID_LEN]) {
    unsigned char b[16];
    randombytes_buf(b, sizeof b);
    sodium_bin2hex(out, RND_ID_LEN, b, sizeof b);
}

void rnd_secret(const char *prefix, char out[RND_SECRET_LEN]) {
    unsigned char b[32];
    size_t pl = strlen(prefix);
    randombytes_buf(b, sizeof b);
    memcpy(out, prefix, pl);
    sodium_bin2base64(out + pl, RND_SECRET_LEN - pl, b, sizeof b,
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    sodium_memzero(b, sizeof b);
}

void rnd_hash_secret(const char *secret, char out[RND_HASH_LEN]) {
    unsigned char h[32];
    crypto_generichash(h, sizeof h, (const unsigned char *)secret, strlen(secret), NULL, 0);
    sodium_bin2hex(out, RND_HASH_LEN, h, sizeof h);
}

int rnd_equal_ct(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la != lb) return 0;
    return sodium_memcmp(a, b, la) == 0;
}
