/* Error vocabulary of the pure layers: 0 or a negative NS_E* code. Raft and
 * libuv codes are translated where they are received and never escape their
 * wrapper. */
#ifndef RAFTNS_ERR_H
#define RAFTNS_ERR_H

#include <stddef.h>

#define NS_ERR_TABLE(X)                                                        \
    X(NS_ENOMEM, -1, "out of memory")                                          \
    X(NS_EINVAL, -2, "invalid argument")                                       \
    X(NS_EPROTO, -3, "malformed input")                                        \
    X(NS_ETOOBIG, -4, "over a size limit")                                     \
    X(NS_EAGAIN, -5, "need more data")                                         \
    X(NS_ENOTFOUND, -6, "not found")                                           \
    X(NS_EIO, -7, "i/o error")                                                 \
    X(NS_EVERSION, -8, "unsupported format version")                           \
    X(NS_ENOTLEADER, -9, "not the leader")                                     \
    X(NS_ETIMEDOUT, -10, "timed out")                                          \
    X(NS_ESHUTDOWN, -11, "shutting down")                                      \
    X(NS_EBUSY, -12, "in use")                                                 \
    X(NS_EPERM, -13, "not permitted")                                          \
    X(NS_ESTALE, -14, "stale request")

enum {
#define NS_ERR_ENUM(name, value, text) name = value,
    NS_ERR_TABLE(NS_ERR_ENUM)
#undef NS_ERR_ENUM
};

/* Static text for an NS_E* code (or "unknown error"). */
const char *ns_strerror(int rv);

/* Formats a reason into a caller's buffer (the errmsg/errlen parameters of the
 * parsers and loaders); does nothing when err is NULL or errlen 0. */
void ns_errf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
