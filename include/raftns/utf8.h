/* Java's decoding of UTF-8 bytes into a String (new String(bytes, UTF_8), and
 * Netty's readCharSequence): every malformed sequence becomes U+FFFD. raftns
 * applies it to request text before parsing so that names carry what Java's
 * would (docs/compat.md). Pure. */
#ifndef RAFTNS_UTF8_H
#define RAFTNS_UTF8_H

#include <stddef.h>
#include <stdint.h>

#include "raftns/buf.h"

/* Returns 0 when [p, p+n) is well-formed UTF-8 (out untouched); otherwise
 * appends the text with each malformed sequence replaced by EF BF BD, the way
 * the JDK's decoder splits them, and returns 1, or the buffer's error. */
int ns_utf8_java(const uint8_t *p, size_t n, struct ns_buf *out);

#endif
