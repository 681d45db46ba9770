/* java.util.Properties text parser (docs/protocol.md §4.13) and the sorted
 * key/value list it fills. It reads bytes as ISO-8859-1, as
 * Properties.load(InputStream) does; it is not a writer and knows nothing of
 * which keys are settings (config.c). Pure. */
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/config.h"
#include "raftns/err.h"
#include "raftns/sorted.h"

void ns_props_init(struct ns_props *p)
{
    p->items = NULL;
    p->n = 0;
}

void ns_props_close(struct ns_props *p)
{
    for (size_t i = 0; i < p->n; i++) {
        ns_free(p->items[i].key);
        ns_free(p->items[i].value);
    }
    ns_free(p->items);
    ns_props_init(p);
}

/* Index of key (found) or its insertion point; items are sorted by key. */
static size_t search(const struct ns_props *p, const char *key, bool *found)
{
    return ns_sorted_search(p->items, p->n, sizeof *p->items,
                            offsetof(struct ns_prop, key), key, found);
}

int ns_props_set(struct ns_props *p, const char *key, const char *value)
{
    char *v = ns_strdup(value);
    if (v == NULL) {
        return NS_ENOMEM;
    }
    bool found;
    size_t i = search(p, key, &found);
    if (found) {
        ns_free(p->items[i].value);
        p->items[i].value = v;
        return 0;
    }
    char *k = ns_strdup(key);
    struct ns_prop *items =
        k ? ns_realloc(p->items, (p->n + 1) * sizeof *items) : NULL;
    if (items == NULL) {
        ns_free(k);
        ns_free(v);
        return NS_ENOMEM;
    }
    p->items = items;
    memmove(&items[i + 1], &items[i], (p->n - i) * sizeof *items);
    items[i].key = k;
    items[i].value = v;
    p->n++;
    return 0;
}

/* --- UTF-16 code units to UTF-8 --- */

struct u8out {
    char *s;
    size_t len;
};

static void put_cp(struct u8out *o, uint32_t cp)
{
    if (cp == 0) {
        return; /* C strings cannot hold NUL: dropped */
    }
    if (cp < 0x80) {
        o->s[o->len++] = (char)cp;
    } else if (cp < 0x800) {
        o->s[o->len++] = (char)(0xC0 | cp >> 6);
        o->s[o->len++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        o->s[o->len++] = (char)(0xE0 | cp >> 12);
        o->s[o->len++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o->s[o->len++] = (char)(0x80 | (cp & 0x3F));
    } else {
        o->s[o->len++] = (char)(0xF0 | cp >> 18);
        o->s[o->len++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        o->s[o->len++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o->s[o->len++] = (char)(0x80 | (cp & 0x3F));
    }
}

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* Java's loadConvert over one logical line's bytes: escapes resolved, each byte
 * an ISO-8859-1 char, surrogate pairs joined (a lone surrogate becomes '?', as
 * Java's UTF-8 encoder writes it). *out is owned. 0, NS_EPROTO (malformed
 * \uXXXX) or NS_ENOMEM. */
static int convert(const unsigned char *in, size_t len, char **out)
{
    int rv = NS_ENOMEM;
    /* Worst case: every byte becomes 2 UTF-8 bytes; "\uXXXX" (6 bytes) at
     * most 3. */
    struct u8out o = {ns_malloc(len * 2 + 1), 0};
    if (o.s == NULL) {
        goto err;
    }
    uint32_t high = 0; /* pending high surrogate */
    size_t i = 0;
    while (i < len) {
        uint32_t c = in[i++];
        if (c == '\\') {
            if (i == len) {
                break; /* lone trailing backslash: dropped */
            }
            c = in[i++];
            if (c == 'u') {
                if (len - i < 4) {
                    goto err_proto;
                }
                uint32_t v = 0;
                for (int k = 0; k < 4; k++) {
                    int h = hexval(in[i++]);
                    if (h < 0) {
                        goto err_proto;
                    }
                    v = v << 4 | (uint32_t)h;
                }
                c = v;
            } else if (c == 't') {
                c = '\t';
            } else if (c == 'r') {
                c = '\r';
            } else if (c == 'n') {
                c = '\n';
            } else if (c == 'f') {
                c = '\f';
            }
        }
        if (high != 0) {
            if (c >= 0xDC00 && c <= 0xDFFF) {
                put_cp(&o, 0x10000 + ((high - 0xD800) << 10) + (c - 0xDC00));
                high = 0;
                continue;
            }
            put_cp(&o, '?');
            high = 0;
        }
        if (c >= 0xD800 && c <= 0xDBFF) {
            high = c;
        } else if (c >= 0xDC00 && c <= 0xDFFF) {
            put_cp(&o, '?');
        } else {
            put_cp(&o, c);
        }
    }
    if (high != 0) {
        put_cp(&o, '?');
    }
    o.s[o.len] = '\0';
    *out = o.s;
    return 0;

err_proto:
    rv = NS_EPROTO;
err:
    ns_free(o.s);
    return rv;
}

static bool is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\f';
}

struct raw_prop {
    char *key, *value;
    size_t seq;
};

struct raw_list {
    struct raw_prop *items;
    size_t n, cap;
};

/* Splits one logical line into key and value (Properties.load0) and appends
 * them. */
static int add_line(struct raw_list *l, const unsigned char *line, size_t limit)
{
    size_t key_len = 0, value_start = limit;
    bool has_sep = false, backslash = false;
    while (key_len < limit) {
        unsigned char c = line[key_len];
        if ((c == '=' || c == ':') && !backslash) {
            value_start = key_len + 1;
            has_sep = true;
            break;
        }
        if (is_ws(c) && !backslash) {
            value_start = key_len + 1;
            break;
        }
        backslash = c == '\\' ? !backslash : false;
        key_len++;
    }
    while (value_start < limit) {
        unsigned char c = line[value_start];
        if (!is_ws(c)) {
            if (!has_sep && (c == '=' || c == ':')) {
                has_sep = true;
            } else {
                break;
            }
        }
        value_start++;
    }
    if (l->n == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 16;
        struct raw_prop *items = ns_realloc(l->items, ncap * sizeof *items);
        if (items == NULL) {
            return NS_ENOMEM;
        }
        l->items = items;
        l->cap = ncap;
    }
    struct raw_prop *p = &l->items[l->n];
    p->seq = l->n;
    int rv = convert(line, key_len, &p->key);
    if (rv != 0) {
        return rv;
    }
    rv = convert(line + value_start, limit - value_start, &p->value);
    if (rv != 0) {
        ns_free(p->key);
        return rv;
    }
    l->n++;
    return 0;
}

/* Reads logical lines (Properties.LineReader): leading whitespace skipped,
 * blank and comment lines skipped, a line ending in an odd number of
 * backslashes continues on the next one (whose leading whitespace is skipped).
 * Calls add_line for each. */
static int read_lines(const unsigned char *t, size_t len, struct raw_list *l)
{
    unsigned char *buf = ns_malloc(len + 1);
    if (buf == NULL) {
        return NS_ENOMEM;
    }
    int rv = 0;
    size_t i = 0;
    while (i < len && rv == 0) {
        size_t n = 0;
        bool continued = false;
        /* Skip leading whitespace and empty lines. */
        while (i < len && (is_ws(t[i]) || t[i] == '\r' || t[i] == '\n')) {
            i++;
        }
        if (i == len) {
            break;
        }
        if (t[i] == '#' || t[i] == '!') {
            while (i < len && t[i] != '\r' && t[i] != '\n') {
                i++;
            }
            continue;
        }
        for (;;) {
            while (i < len && t[i] != '\r' && t[i] != '\n') {
                buf[n++] = t[i++];
            }
            size_t bs = 0;
            while (bs < n && buf[n - 1 - bs] == '\\') {
                bs++;
            }
            continued = bs % 2 == 1;
            if (!continued || i == len) {
                if (continued) {
                    n--; /* a trailing continuation backslash at the end of
                            input */
                }
                break;
            }
            n--; /* drop the continuation backslash */
            if (t[i] == '\r' && i + 1 < len && t[i + 1] == '\n') {
                i++;
            }
            i++;
            while (i < len && is_ws(t[i])) {
                i++;
            }
        }
        rv = add_line(l, buf, n);
    }
    ns_free(buf);
    return rv;
}

static int cmp_raw(const void *a, const void *b)
{
    const struct raw_prop *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c != 0) {
        return c;
    }
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int ns_props_parse(const char *text, size_t len, struct ns_props *out)
{
    struct raw_list l = {NULL, 0, 0};
    ns_props_init(out);
    int rv = read_lines((const unsigned char *)text, len, &l);
    if (rv != 0) {
        goto err_after_list;
    }
    /* Later duplicates win: sort by (key, position), keep the last of each run.
     */
    if (l.n > 1) {
        qsort(l.items, l.n, sizeof *l.items, cmp_raw);
    }
    out->items = ns_calloc(l.n ? l.n : 1, sizeof *out->items);
    if (out->items == NULL) {
        rv = NS_ENOMEM;
        goto err_after_list;
    }
    for (size_t i = 0; i < l.n; i++) {
        if (i + 1 < l.n && strcmp(l.items[i].key, l.items[i + 1].key) == 0) {
            ns_free(l.items[i].key);
            ns_free(l.items[i].value);
            continue;
        }
        out->items[out->n].key = l.items[i].key;
        out->items[out->n].value = l.items[i].value;
        out->n++;
    }
    ns_free(l.items);
    return 0;

err_after_list:
    for (size_t i = 0; i < l.n; i++) {
        ns_free(l.items[i].key);
        ns_free(l.items[i].value);
    }
    ns_free(l.items);
    return rv;
}
