/*
 * rand.h - random identifiers and secrets, and hashing of secrets (libsodium).
 *
 * Call rnd_init() once at process start (it initialises libsodium).
 * Ids are 16 random bytes as 32 hex chars: opaque and unguessable.
 * Secrets are 32 random bytes (256 bits), URL-safe base64 without padding,
 * behind a short type prefix ("gpt_" tokens, "sk-" API keys).
 * Secrets are stored only as rnd_hash_secret() digests (BLAKE2b-256, hex).
 */
#ifndef GP_RAND_H
#define GP_RAND_H

#include <stddef.h>

#define RND_ID_LEN 33     /* 32 hex chars + NUL */
#define RND_SECRET_LEN 64 /* prefix + 43 base64url chars + NUL, with room */
#define RND_HASH_LEN 65   /* 64 hex chars + NUL */

/* Initialise the random source; returns 0 or -1 if libsodium cannot start. */
int rnd_init(void);

/* Write a fresh 32-hex-char id into out (size >= RND_ID_LEN). */
void rnd_id(char out[RND_ID_LEN]);

/* Write `prefix` followed by 256 random bits (base64url) into out (size RND_SECRET_LEN). */
void rnd_secret(const char *prefix, char out[RND_SECRET_LEN]);

/* Hex BLAKE2b-256 digest of a secret, for storage and lookup. */
void rnd_hash_secret(const char *secret, char out[RND_HASH_LEN]);

/* Constant-time equality of two NUL-terminated strings of equal length; 1 if equal. */
int rnd_equal_ct(const char *a, const char *b);

#endif
