/*
 * yaml.c - `-o yaml`: a JSON value printed as block-style YAML 1.2, the way
 * kubectl prints it (sequences under a key not indented further).
 *
 * Every JSON value has a YAML form here: objects as mappings, arrays as
 * sequences, empty ones as {} and [], null/true/false and numbers as they
 * are, strings plain when YAML would read them back as the same string and
 * double-quoted (JSON's escapes, which YAML's double-quoted style shares)
 * otherwise.  So `yq`/PyYAML read back exactly the JSON the API answered.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Would YAML read `s` unquoted as this very string?  Conservative: letters, digits and a few
 * marks, not starting with an indicator, nothing that reads as null, a boolean or a number. */
static int plain_ok(const char *s) {
    size_t n = strlen(s);
    if (!n || s[0] == ' ' || s[n - 1] == ' ') return 0;
    if (strchr("-?:,[]{}#&*!|>'\"%@`.~+=0123456789", s[0])) return 0;
    static const char *const special[] = {"null", "Null", "NULL", "true", "True", "TRUE", "false",
                                          "False", "FALSE", "yes", "Yes", "YES", "no", "No", "NO",
                                          "on", "On", "ON", "off", "Off", "OFF", "y", "Y", "n", "N",
                                          ".inf", ".nan", NULL};
    for (const char *const *k = special; *k; k++)
        if (strcmp(s, *k) == 0) return 0;
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '-' || c == '_' || c == '.' || c == '/' || c == ' ' || c == '@' || c == '+' ||
                 c == ':' || c == '(' || c == ')' || c == ',';
        if (!ok) return 0;
        /* ": " starts a mapping value, " #" a comment */
        if (c == ':' && (p[1] == ' ' || p[1] == '\0')) return 0;
    }
    return 1;
}

static void put_string(FILE *f, const char *s) {
    if (plain_ok(s)) {
        fputs(s, f);
        return;
    }
    json_t *j = json_string(s);
    char *q = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    fputs(q ? q : "\"\"", f);
    free(q);
    json_decref(j);
}

static int scalar(const json_t *v) {
    return !(json_is_object(v) && json_object_size(v)) && !(json_is_array(v) && json_array_size(v));
}

static void put_scalar(FILE *f, const json_t *v) {
    if (json_is_string(v)) put_string(f, json_string_value(v));
    else if (json_is_object(v)) fputs("{}", f);
    else if (json_is_array(v)) fputs("[]", f);
    else {
        char *s = json_dumps(v, JSON_ENCODE_ANY);
        fputs(s ? s : "null", f);
        free(s);
    }
}

static void put_seq(FILE *f, const json_t *a, int ind, int inline_first);

static void put_map(FILE *f, const json_t *o, int ind, int inline_first) {
    const char *k;
    json_t *v;
    int first = 1;
    json_object_foreach((json_t *)o, k, v) {
        if (!(first && inline_first)) fprintf(f, "%*s", ind, "");
        first = 0;
        put_string(f, k);
        fputc(':', f);
        if (scalar(v)) {
            fputc(' ', f);
            put_scalar(f, v);
            fputc('\n', f);
        } else if (json_is_object(v)) {
            fputc('\n', f);
            put_map(f, v, ind + 2, 0);
        } else {
            fputc('\n', f);
            put_seq(f, v, ind, 0);
        }
    }
}

static void put_seq(FILE *f, const json_t *a, int ind, int inline_first) {
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) {
        if (!(i == 0 && inline_first)) fprintf(f, "%*s", ind, "");
        fputs("- ", f);
        if (scalar(v)) {
            put_scalar(f, v);
            fputc('\n', f);
        } else if (json_is_object(v)) {
            put_map(f, v, ind + 2, 1);
        } else {
            put_seq(f, v, ind + 2, 1);
        }
    }
}

void cli_yaml_print(FILE *f, const json_t *v) {
    if (scalar(v)) {
        put_scalar(f, v);
        fputc('\n', f);
    } else if (json_is_object(v)) {
        put_map(f, v, 0, 0);
    } else {
        put_seq(f, v, 0, 0);
    }
}
