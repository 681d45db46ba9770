/* fastjson output read by cJSON (docs/protocol.md §4.1): a pre-pass quotes bare
 * integer object keys and bounds the nesting depth, then cJSON parses. It knows
 * no body schema. */
#include "raftns/json.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "raftns/alloc.h"
#include "raftns/decimal.h"
#include "raftns/err.h"

static bool
    alloc_failed; /* set by the cJSON hook; single-threaded like ns_malloc */

static void *json_malloc(size_t size)
{
    void *p = ns_malloc(size);
    if (p == NULL) {
        alloc_failed = true;
    }
    return p;
}

void ns_json_use_ns_alloc(void)
{
    cJSON_Hooks hooks = {.malloc_fn = json_malloc, .free_fn = ns_free};
    cJSON_InitHooks(&hooks);
}

static bool is_ws(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

static bool is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

/* If a bare integer key (-?[0-9]+ then optional blanks then ':') starts at i,
 * returns its length, else 0. */
static size_t bare_key_len(const char *t, size_t len, size_t i)
{
    size_t j = i;
    if (j < len && t[j] == '-') {
        j++;
    }
    size_t digits = j;
    while (j < len && is_digit(t[j])) {
        j++;
    }
    if (j == digits) {
        return 0;
    }
    size_t end = j;
    while (j < len && is_ws(t[j])) {
        j++;
    }
    return j < len && t[j] == ':' ? end - i : 0;
}

/* One walk outside string literals. With out == NULL it counts the bare keys
 * and checks the depth (returns false when too deep); with out it writes the
 * text with those keys quoted. */
static bool walk(const char *t, size_t len, char *out, size_t *n_keys)
{
    int depth = 0;
    bool in_str = false;
    bool key_may_follow = false; /* just after '{' or ',' (and blanks) */
    size_t o = 0;
    *n_keys = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = t[i];
        if (in_str && out == NULL) {
            /* Counting pass: jump to the next quote or backslash. */
            while (i < len && t[i] != '"' && t[i] != '\\') {
                i++;
            }
            if (i >= len) {
                break;
            }
            ch = t[i];
        }
        if (in_str) {
            if (ch == '\\' && i + 1 < len) {
                if (out) {
                    out[o++] = ch;
                }
                ch = t[++i];
            } else if (ch == '"') {
                in_str = false;
            }
        } else if (key_may_follow && !is_ws(ch)) {
            key_may_follow = false;
            size_t k = bare_key_len(t, len, i);
            if (k > 0) {
                (*n_keys)++;
                if (out) {
                    out[o++] = '"';
                    memcpy(out + o, t + i, k);
                    o += k;
                    out[o++] = '"';
                }
                i += k - 1;
                continue;
            }
            i--; /* look at this character again as ordinary text */
            continue;
        } else if (ch == '"') {
            in_str = true;
        } else if (ch == '{' || ch == '[') {
            if (++depth > NS_JSON_MAX_DEPTH) {
                return false;
            }
            key_may_follow = ch == '{';
        } else if (ch == '}' || ch == ']') {
            depth--;
        } else if (ch == ',') {
            key_may_follow = true;
        }
        if (out) {
            out[o++] = ch;
        }
    }
    return true;
}

static bool only_blanks(const char *p, const char *end)
{
    for (; p < end; p++) {
        if (!is_ws(*p)) {
            return false;
        }
    }
    return true;
}

cJSON *ns_json_parse_rv(const char *text, size_t len, int *rv)
{
    size_t n_keys = 0;
    char *copy = NULL;
    cJSON *root = NULL;
    ns_json_use_ns_alloc();
    *rv = NS_EPROTO;
    if (!walk(text, len, NULL, &n_keys)) {
        return NULL;
    }
    if (n_keys > 0) {
        if (n_keys > (SIZE_MAX - len) / 2) {
            return NULL;
        }
        copy = ns_malloc(len + 2 * n_keys);
        if (copy == NULL) {
            *rv = NS_ENOMEM;
            return NULL;
        }
        walk(text, len, copy, &n_keys);
        text = copy;
        len += 2 * n_keys;
    }
    const char *end = NULL;
    alloc_failed = false;
    root = cJSON_ParseWithLengthOpts(text, len, &end, false);
    if (root == NULL) {
        *rv = alloc_failed ? NS_ENOMEM : NS_EPROTO;
    } else if (!only_blanks(end, text + len)) {
        cJSON_Delete(root);
        root = NULL;
    } else {
        *rv = 0;
    }
    ns_free(copy);
    return root;
}

cJSON *ns_json_parse(const char *text, size_t len)
{
    int rv;
    return ns_json_parse_rv(text, len, &rv);
}

int64_t ns_json_get_int64(const cJSON *obj, const char *key, int64_t dflt)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
    int64_t v = dflt;
    if (cJSON_IsNumber(item)) {
        double d = item->valuedouble;
        /* 2^63 is exactly representable; anything at or beyond it is out of
         * range. */
        if (d >= -9223372036854775808.0 && d < 9223372036854775808.0) {
            v = (int64_t)d;
        }
    } else if (cJSON_IsString(item) &&
               /* Long.parseLong-like, but ASCII digits only */
               !ns_decimal_parse(item->valuestring, strlen(item->valuestring),
                                 NS_DECIMAL_SIGN, INT64_MIN, INT64_MAX, &v)) {
        v = dflt;
    }
    return v;
}

bool ns_json_get_bool(const cJSON *obj, const char *key, bool dflt)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (cJSON_IsBool(item)) {
        return cJSON_IsTrue(item);
    }
    if (cJSON_IsNumber(item)) {
        return item->valuedouble != 0;
    }
    if (cJSON_IsString(item)) {
        if (strcasecmp(item->valuestring, "true") == 0) {
            return true;
        }
        if (strcasecmp(item->valuestring, "false") == 0) {
            return false;
        }
    }
    return dflt;
}

const char *ns_json_get_string(const cJSON *obj, const char *key)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(item) ? item->valuestring : NULL;
}
