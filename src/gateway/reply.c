/* Reply construction: the generic reply header (docs/protocol.md §2.7) and
 * encoding into the connection's output. It decides no reply codes of its own
 * except for failed proposals. */
#include <stdarg.h>
#include <stdio.h>

#include "raftns/codes.h"
#include "raftns/err.h"
#include "raftns/log.h"
#include "raftns/metrics.h"
#include "gateway/gateway_int.h"

void ns_reply_init(struct ns_cmd *reply, const struct ns_reply_to *to,
                   int32_t code)
{
    ns_cmd_init(reply);
    reply->code = code;
    reply->flag = NS_FLAG_RESPONSE;
    reply->opaque = to->opaque;
    reply->language = NS_LANG_JAVA;
    reply->version = NS_SERVER_VERSION;
    reply->ser = to->ser;
}

int ns_reply_send(const struct ns_reply_to *to, struct ns_cmd *reply)
{
    int rv = 0;
    if (to->start_ns != 0) {
        ns_metrics_request(to->req_code, reply->code,
                           uv_hrtime() - to->start_ns);
    }
    if (to->oneway || to->conn == NULL || ns_conn_is_closing(to->conn)) {
        goto out;
    }
    if (to->served_by != 0) {
        char id[24];
        snprintf(id, sizeof id, "%llu", (unsigned long long)to->served_by);
        rv = ns_cmd_ext_set(reply, NS_EXT_SERVED_BY, id);
        if (rv != 0) {
            goto out;
        }
    }
    struct ns_buf frame;
    ns_buf_init(&frame);
    rv = ns_cmd_encode(reply, &frame);
    if (rv == 0 && frame.err != 0) {
        rv = frame.err;
    }
    if (rv == 0) {
        rv = ns_conn_queue(to->conn, &frame);
        /* A queue failure already closed the connection: not the caller's
         * error. */
        rv = 0;
    }
    ns_buf_close(&frame);
out:
    ns_cmd_close(reply);
    return rv;
}

int ns_reply_simple(const struct ns_reply_to *to, int32_t code,
                    const char *remark)
{
    struct ns_cmd reply;
    ns_reply_init(&reply, to, code);
    if (remark != NULL && ns_cmd_set_remark(&reply, remark) != 0) {
        ns_cmd_close(&reply);
        return NS_ENOMEM;
    }
    return ns_reply_send(to, &reply);
}

int ns_reply_exception(const struct ns_reply_to *to, const char *remark)
{
    struct ns_cmd reply;
    ns_reply_init(&reply, to, NS_CODE_SYSTEM_ERROR);
    /* Java's catch-all builds a fresh response and never copies the
     * request's serialize type onto it: always JSON, no extFields. */
    reply.ser = NS_SER_JSON;
    if (ns_cmd_set_remark(&reply, remark) != 0) {
        ns_cmd_close(&reply);
        return NS_ENOMEM;
    }
    return ns_reply_send(to, &reply);
}

int ns_reply_body(const struct ns_reply_to *to, int32_t code,
                  const uint8_t *body, size_t len)
{
    struct ns_cmd reply;
    ns_reply_init(&reply, to, code);
    reply.body = body;
    reply.body_len = len;
    return ns_reply_send(to, &reply);
}

int ns_reply_write_error(const struct ns_reply_to *to, int status)
{
    const char *remark;
    switch (status) {
    case NS_ETIMEDOUT:
        return ns_reply_remarkf(
            to, 1,
            "no raft leader confirmed the write within %u ms; retry later (a "
            "write that reached a leader may still be applied)",
            to->waits != NULL ? (unsigned)to->waits->write_ms : 0u);
    case NS_ENOTLEADER:
        remark = "raft leadership lost while the write was in flight; its "
                 "outcome is "
                 "unknown, retry";
        break;
    case NS_ESHUTDOWN:
        remark = "name server shutting down; the write's outcome is unknown";
        break;
    case NS_EPROTO:
        remark = "the write could not be applied (node diverged)";
        break;
    case NS_ENOMEM:
        remark = "out of memory";
        break;
    case NS_ESTALE:
        remark = "the write was refused as a stale copy (its request id is "
                 "older than the cluster remembers); it was not applied";
        break;
    case NS_ETOOBIG:
        return ns_reply_remarkf(to, NS_CODE_SYSTEM_ERROR,
                                "the write is too large to replicate: its "
                                "command is over %u bytes; it was not applied",
                                (unsigned)NS_COMMAND_MAX);
    default:
        remark = "the write failed on the raft log (i/o error)";
        break;
    }
    return ns_reply_simple(to, NS_CODE_SYSTEM_ERROR, remark);
}

int ns_reply_remarkf(const struct ns_reply_to *to, int32_t code,
                     const char *fmt, ...)
{
    struct ns_buf b;
    ns_buf_init(&b);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    int rv = NS_ENOMEM;
    if (n >= 0 && ns_buf_reserve(&b, (size_t)n + 1) == 0) {
        va_start(ap, fmt);
        vsnprintf((char *)b.data, (size_t)n + 1, fmt, ap);
        va_end(ap);
        rv = ns_reply_simple(to, code, (const char *)b.data);
    }
    ns_buf_close(&b);
    return rv;
}

int ns_reply_buf(const struct ns_reply_to *to, int rv, const struct ns_buf *b)
{
    if (rv != 0 || b->err != 0) {
        return NS_ENOMEM;
    }
    return ns_reply_body(to, NS_CODE_SUCCESS, b->data, b->len);
}
