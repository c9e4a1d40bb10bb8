/*
 * test_core.c - strbuf, jsonx, gtime, err and rand.
 */
#include "testutil.h"

#include "../../src/core/err.h"
#include "../../src/core/gtime.h"
#include "../../src/core/jsonx.h"
#include "../../src/core/rand.h"
#include "../../src/core/strbuf.h"

static void strbuf_basics(void **state) {
    (void)state;
    strbuf sb = SB_INIT;
    assert_string_equal(sb.buf, "");
    assert_int_equal(sb.len, 0);
    sb_adds(&sb, "abc");
    sb_addc(&sb, '-');
    sb_addf(&sb, "%d/%s", 42, "x");
    assert_string_equal(sb.buf, "abc-42/x");
    assert_int_equal(sb.len, 8);
    for (int i = 0; i < 1000; i++) sb_adds(&sb, "0123456789");
    assert_int_equal(sb.len, 10008);
    assert_int_equal(sb.buf[sb.len], '\0');
    sb_setlen(&sb, 3);
    assert_string_equal(sb.buf, "abc");
    unsigned char bytes[] = {0x00, 0xff, 0x1a};
    sb_addhex(&sb, bytes, 3);
    assert_string_equal(sb.buf, "abc00ff1a");
    char *s = sb_detach(&sb);
    assert_string_equal(s, "abc00ff1a");
    assert_string_equal(sb.buf, "");
    free(s);
    /* detach of a never-grown buffer still returns a heap string */
    s = sb_detach(&sb);
    assert_non_null(s);
    assert_string_equal(s, "");
    free(s);
    sb_release(&sb);
    sb_release(NULL);
}

static void strbuf_oom_is_sticky(void **state) {
    (void)state;
    strbuf sb = SB_INIT;
    sb_adds(&sb, "x");
    assert_int_equal(sb_grow(&sb, ((size_t)-1) / 2), -1);
    assert_false(sb_ok(&sb));
    sb_adds(&sb, "more"); /* ignored */
    assert_string_equal(sb.buf, "x");
    assert_null(sb_detach(&sb));
    assert_true(sb_ok(&sb)); /* detach re-initialises */
    sb_release(&sb);
}

static void jsonx_depth_and_parse(void **state) {
    (void)state;
    gp_err err = GP_ERR_INIT;
    json_t *v;
    assert_int_equal(jx_depth("{}", 2, 10), 1);
    assert_int_equal(jx_depth("[[[]]]", 6, 10), 3);
    assert_int_equal(jx_depth("\"[[[[\"", 6, 10), 0); /* brackets in strings do not count */
    assert_int_equal(jx_depth("\"\\\"[[\"", 6, 10), 0);
    assert_int_equal(jx_depth("[[[[[", 5, 3), 4);

    assert_int_equal(jx_parse("{\"a\":1}", 7, 4, 1, &v, &err), GP_OK);
    json_decref(v);
    assert_int_equal(jx_parse("{\"a\":", 5, 4, 1, &v, &err), GP_EBADJSON);
    assert_null(v);
    assert_non_null(strstr(err.msg, "malformed JSON"));
    assert_int_equal(jx_parse("[1]", 3, 4, 1, &v, &err), GP_EINVALID);
    assert_int_equal(jx_parse("{\"a\":1,\"a\":2}", 13, 4, 1, &v, &err), GP_EBADJSON);
    char deep[100];
    memset(deep, '[', 40);
    memset(deep + 40, ']', 40);
    assert_int_equal(jx_parse(deep, 80, 32, 0, &v, &err), GP_EINVALID);
    assert_non_null(strstr(err.msg, "deeper"));
    assert_int_equal(jx_parse(deep + 10, 60, 32, 0, &v, &err), GP_OK);
    json_decref(v);
}

static void jsonx_getters(void **state) {
    (void)state;
    gp_err err = GP_ERR_INIT;
    json_t *o = json_pack("{s:s,s:i,s:b,s:n,s:s%}", "s", "x", "i", 5, "b", 1, "nul", "z", "a\0b", 3);
    const char *s;
    int64_t i;
    int b, present;
    assert_int_equal(jx_get_str(o, "s", 1, &s, &err), GP_OK);
    assert_string_equal(s, "x");
    assert_int_equal(jx_get_str(o, "i", 1, &s, &err), GP_EINVALID);
    assert_non_null(strstr(err.msg, "'i' must be a string"));
    assert_int_equal(jx_get_str(o, "missing", 0, &s, &err), GP_OK);
    assert_null(s);
    assert_int_equal(jx_get_str(o, "nul", 1, &s, &err), GP_EINVALID); /* null counts as absent */
    assert_int_equal(jx_get_str(o, "z", 1, &s, &err), GP_EINVALID);   /* embedded NUL */
    assert_int_equal(jx_get_int(o, "i", 1, &i, &present, &err), GP_OK);
    assert_int_equal(i, 5);
    assert_int_equal(jx_get_int(o, "s", 1, &i, &present, &err), GP_EINVALID);
    assert_int_equal(jx_get_bool(o, "b", 1, &b, &present, &err), GP_OK);
    assert_true(b);
    assert_int_equal(jx_get_bool(o, "i", 1, &b, &present, &err), GP_EINVALID);
    static const char *const allowed[] = {"s", "i", "b", "nul", "z", NULL};
    assert_int_equal(jx_only_fields(o, allowed, &err), GP_OK);
    static const char *const fewer[] = {"s", NULL};
    assert_int_equal(jx_only_fields(o, fewer, &err), GP_EINVALID);
    assert_non_null(strstr(err.msg, "unknown field"));
    json_decref(o);
}

static void names(void **state) {
    (void)state;
    assert_true(gp_name_valid("research"));
    assert_true(gp_name_valid("vision-b2"));
    assert_true(gp_name_valid("a"));
    assert_false(gp_name_valid(""));
    assert_false(gp_name_valid("-a"));
    assert_false(gp_name_valid("a-"));
    assert_false(gp_name_valid("Research"));
    assert_false(gp_name_valid("a_b"));
    assert_false(gp_name_valid("a/b"));
    assert_false(gp_name_valid("a b"));
    char long_name[80];
    memset(long_name, 'a', 64);
    long_name[64] = '\0';
    assert_false(gp_name_valid(long_name));
    long_name[63] = '\0';
    assert_true(gp_name_valid(long_name));
}

static void time_roundtrip(void **state) {
    (void)state;
    char buf[GT_RFC3339_LEN];
    int64_t us;
    gt_format_us(0, buf, sizeof buf);
    assert_string_equal(buf, "1970-01-01T00:00:00.000000Z");
    gt_format_us(1796212800123456LL, buf, sizeof buf);
    assert_string_equal(buf, "2026-12-02T12:00:00.123456Z");
    assert_int_equal(gt_parse_rfc3339(buf, &us), 0);
    assert_int_equal(us, 1796212800123456LL);
    assert_int_equal(gt_parse_rfc3339("2026-12-02T13:00:00+01:00", &us), 0);
    assert_int_equal(us, 1796212800000000LL);
    assert_int_equal(gt_parse_rfc3339("2026-12-02T12:00:00.5Z", &us), 0);
    assert_int_equal(us, 1796212800500000LL);
    assert_int_equal(gt_parse_rfc3339("2026-12-02", &us), -1);
    assert_int_equal(gt_parse_rfc3339("2026-13-02T12:00:00Z", &us), -1);
    assert_int_equal(gt_parse_rfc3339("2026-12-02T12:00:00", &us), -1);
    assert_int_equal(gt_parse_rfc3339("2026-12-02T12:00:00Zjunk", &us), -1);
    gt_format_us(-1, buf, sizeof buf);
    assert_string_equal(buf, "1969-12-31T23:59:59.999999Z");
}

static void errors_and_random(void **state) {
    (void)state;
    gp_err err = GP_ERR_INIT;
    assert_string_equal(gp_err_name(GP_ENOTFOUND), "not_found");
    assert_string_equal(gp_err_name(12345), "internal");
    assert_int_equal(gp_err_set(&err, GP_ECONFLICT, "x %d", 1), GP_ECONFLICT);
    assert_string_equal(err.msg, "x 1");
    gp_err_set(&err, GP_EINVALID, NULL);
    assert_string_equal(err.msg, "invalid argument");
    assert_int_equal(gp_err_set(NULL, GP_EIO, "ignored"), GP_EIO);

    assert_int_equal(rnd_init(), 0);
    char a[RND_ID_LEN], b[RND_ID_LEN], s[RND_SECRET_LEN], h1[RND_HASH_LEN], h2[RND_HASH_LEN];
    rnd_id(a);
    rnd_id(b);
    assert_int_equal(strlen(a), 32);
    assert_string_not_equal(a, b);
    rnd_secret("gpt_", s);
    assert_int_equal(strncmp(s, "gpt_", 4), 0);
    assert_int_equal(strlen(s), 4 + 43); /* 256 bits in base64url without padding */
    rnd_hash_secret(s, h1);
    rnd_hash_secret(s, h2);
    assert_int_equal(strlen(h1), 64);
    assert_true(rnd_equal_ct(h1, h2));
    h2[10] = h2[10] == 'a' ? 'b' : 'a';
    assert_false(rnd_equal_ct(h1, h2));
    assert_false(rnd_equal_ct("abc", "abcd"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(strbuf_basics),   cmocka_unit_test(strbuf_oom_is_sticky),
        cmocka_unit_test(jsonx_depth_and_parse), cmocka_unit_test(jsonx_getters),
        cmocka_unit_test(names),           cmocka_unit_test(time_roundtrip),
        cmocka_unit_test(errors_and_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
