/* Raw text of the member values of a JSON object, in document order: what a
 * cJSON tree loses (a number's digits). Callers first parse the same text
 * with ns_json_parse, so this skipper only has to be right on text cJSON
 * accepts; it does not validate beyond what it needs. Pure. */
#include <string.h>

#include "raftns/json.h"

struct skip {
    const char *p;
    const char *end;
};

static void blanks(struct skip *s)
{
    /* fastjson's blanks; callers refuse other control bytes first. */
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' ||
                             *s->p == '\r' || *s->p == '\f' || *s->p == '\b')) {
        s->p++;
    }
}

static bool string_lit(struct skip *s)
{
    s->p++;
    while (s->p < s->end && *s->p != '"') {
        s->p += *s->p == '\\' ? 2 : 1;
    }
    if (s->p >= s->end) {
        return false;
    }
    s->p++;
    return true;
}

static bool is_scalar_char(char ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
           (ch >= 'A' && ch <= 'Z') || ch == '-' || ch == '+' || ch == '.';
}

static bool value(struct skip *s, int depth);

static bool container(struct skip *s, int depth)
{
    char close = *s->p == '{' ? '}' : ']';
    if (depth >= NS_JSON_MAX_DEPTH) {
        return false;
    }
    s->p++;
    blanks(s);
    if (s->p < s->end && *s->p == close) {
        s->p++;
        return true;
    }
    for (;;) {
        blanks(s);
        if (close == '}') {
            /* A key: quoted, or a bare integer (fastjson's legacy maps). */
            if (s->p < s->end && *s->p == '"') {
                if (!string_lit(s)) {
                    return false;
                }
            } else {
                while (s->p < s->end && is_scalar_char(*s->p)) {
                    s->p++;
                }
            }
            blanks(s);
            if (s->p >= s->end || *s->p++ != ':') {
                return false;
            }
        }
        if (!value(s, depth + 1)) {
            return false;
        }
        blanks(s);
        if (s->p >= s->end) {
            return false;
        }
        char ch = *s->p++;
        if (ch == close) {
            return true;
        }
        if (ch != ',') {
            return false;
        }
    }
}

static bool value(struct skip *s, int depth)
{
    blanks(s);
    if (s->p >= s->end) {
        return false;
    }
    if (*s->p == '"') {
        return string_lit(s);
    }
    if (*s->p == '{' || *s->p == '[') {
        return container(s, depth);
    }
    const char *start = s->p;
    while (s->p < s->end && is_scalar_char(*s->p)) {
        s->p++;
    }
    return s->p > start;
}

bool ns_json_members_init(struct ns_json_members *it, const char *text,
                          size_t len)
{
    struct skip s = {.p = text, .end = text + len};
    blanks(&s);
    if (s.p >= s.end || *s.p != '{') {
        return false;
    }
    s.p++;
    blanks(&s);
    it->p = s.p;
    it->end = s.end;
    it->done = s.p < s.end && *s.p == '}';
    it->bare_key = false;
    return true;
}

int ns_json_members_next(struct ns_json_members *it, struct ns_json_span *out)
{
    if (it->done) {
        return 0;
    }
    struct skip s = {.p = it->p, .end = it->end};
    blanks(&s);
    it->bare_key = s.p >= s.end || *s.p != '"';
    if (!it->bare_key) {
        if (!string_lit(&s)) {
            return -1;
        }
    } else {
        while (s.p < s.end && is_scalar_char(*s.p)) {
            s.p++;
        }
    }
    blanks(&s);
    if (s.p >= s.end || *s.p++ != ':') {
        return -1;
    }
    blanks(&s);
    const char *start = s.p;
    if (!value(&s, 1)) {
        return -1;
    }
    out->p = start;
    out->len = (size_t)(s.p - start);
    blanks(&s);
    if (s.p >= s.end) {
        return -1;
    }
    char ch = *s.p++;
    if (ch != '}' && ch != ',') {
        return -1;
    }
    it->done = ch == '}';
    it->p = s.p;
    return 1;
}

bool ns_json_span_of(const char *text, size_t len, const cJSON *obj,
                     const cJSON *member, struct ns_json_span *out)
{
    struct ns_json_members it;
    if (!ns_json_members_init(&it, text, len)) {
        return false;
    }
    for (const cJSON *c = obj->child; c != NULL; c = c->next) {
        if (ns_json_members_next(&it, out) != 1) {
            return false;
        }
        if (c == member) {
            return true;
        }
    }
    return false;
}
