/* Malformed UTF-8 replaced as the JDK's UTF-8 decoder does (include/raftns/
 * utf8.h): the length of each malformed sequence follows the JDK's rules, so
 * the number of U+FFFD matches a Java String of the same bytes. It does not
 * validate anything beyond UTF-8. Pure. */
#include "raftns/utf8.h"

#include <stdbool.h>
#include <string.h>

static const uint8_t REPLACEMENT[3] = {0xEF, 0xBF, 0xBD};

static bool cont(uint8_t b)
{
    return (b & 0xC0) == 0x80;
}

/* Bytes of the well-formed sequence at p[0..left), or 0 with *bad set to the
 * length of the malformed sequence to replace. */
static size_t sequence(const uint8_t *p, size_t left, size_t *bad)
{
    uint8_t b1 = p[0];
    *bad = 1;
    if (b1 < 0x80) {
        return 1;
    }
    if (b1 >= 0xC2 && b1 <= 0xDF) {
        return left >= 2 && cont(p[1]) ? 2 : 0;
    }
    if (b1 >= 0xE0 && b1 <= 0xEF) {
        bool bad2 =
            left >= 2 && ((b1 == 0xE0 && (p[1] & 0xE0) == 0x80) || !cont(p[1]));
        if (left < 3) {
            *bad = bad2 ? 1 : left; /* a cut-off tail is one replacement */
            return 0;
        }
        if (bad2) {
            return 0;
        }
        if (!cont(p[2])) {
            *bad = 2;
            return 0;
        }
        if (b1 == 0xED && p[1] >= 0xA0) {
            *bad = 3; /* a surrogate code point */
            return 0;
        }
        return 3;
    }
    if (b1 >= 0xF0 && b1 <= 0xF4) {
        bool bad2 =
            left >= 2 && ((b1 == 0xF0 && (p[1] < 0x90 || p[1] > 0xBF)) ||
                          (b1 == 0xF4 && (p[1] & 0xF0) != 0x80) || !cont(p[1]));
        if (bad2) {
            return 0;
        }
        if (left >= 3 && !cont(p[2])) {
            *bad = 2;
            return 0;
        }
        if (left < 4) {
            *bad = left;
            return 0;
        }
        if (!cont(p[3])) {
            *bad = 3;
            return 0;
        }
        return 4;
    }
    return 0; /* 80..C1, F5..FF */
}

/* The length of the ASCII prefix of p[0..n) rounded down to whole 8-byte
 * words: a registration body is ~20 KB of ASCII checked on every request, and
 * a byte loop cost ~5 instructions a byte there (BENCHMARKS.md,
 * "Registration work per changed registration"). */
static size_t ascii_words(const uint8_t *p, size_t n)
{
    size_t i = 0;
    while (n - i >= 8) {
        uint64_t w;
        memcpy(&w, p + i, sizeof w);
        if ((w & UINT64_C(0x8080808080808080)) != 0) {
            break;
        }
        i += 8;
    }
    return i;
}

int ns_utf8_java(const uint8_t *p, size_t n, struct ns_buf *out)
{
    size_t i = 0;
    size_t bad;
    while (i < n) {
        i += ascii_words(p + i, n - i);
        if (i == n) {
            break;
        }
        if (p[i] < 0x80) {
            i++; /* the common case: ASCII */
            continue;
        }
        size_t ok = sequence(p + i, n - i, &bad);
        if (ok == 0) {
            break;
        }
        i += ok;
    }
    if (i == n) {
        return 0;
    }
    ns_buf_append(out, p, i);
    while (i < n) {
        size_t ok = sequence(p + i, n - i, &bad);
        if (ok > 0) {
            ns_buf_append(out, p + i, ok);
            i += ok;
        } else {
            ns_buf_append(out, REPLACEMENT, sizeof REPLACEMENT);
            i += bad;
        }
    }
    return out->err != 0 ? out->err : 1;
}
