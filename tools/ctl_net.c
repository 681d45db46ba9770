/* raftnsctl's transport: blocking sockets with one deadline per address, one
 * request/reply exchange matched by opaque, and fail-over across the given
 * addresses. Not a library and no event loop: only raftnsctl is built from it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "raftns/acl.h"
#include "raftns/alloc.h"
#include "raftns/buf.h"
#include "raftns/codes.h"
#include "raftns/err.h"
#include "raftns/remoting.h"
#include "raftns/sign.h"
#include "raftns/tls.h"

#include "ctl.h"

#define RX_CHUNK 65536

static const char *code_name(int32_t code)
{
    const char *name = ns_code_response_name(code);
    return name ? name : "UNKNOWN";
}

/* ---------------------------------------------------------------- time and
 * sockets */

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int left_ms(int64_t deadline)
{
    int64_t left = deadline - now_ms();
    return left < 0 ? 0 : (int)left;
}

/* Waits for events on fd until the deadline. Returns 1 when ready, 0 on
 * timeout, -1 on error. */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = events};
        int rv = poll(&p, 1, left_ms(deadline));
        if (rv >= 0)
            return rv > 0 ? 1 : 0;
        if (errno != EINTR)
            return -1;
    }
}

/* Splits "host:port" or "[v6]:port" into owned-by-caller buffers. Returns 0 or
 * -1. */
static int split_addr(const char *addr, char *host, size_t host_len, char *port,
                      size_t port_len)
{
    const char *colon;
    const char *h = addr;
    size_t hl;
    if (addr[0] == '[') {
        const char *end = strchr(addr, ']');
        if (!end || end[1] != ':')
            return -1;
        h = addr + 1;
        hl = (size_t)(end - h);
        colon = end + 1;
    } else {
        colon = strrchr(addr, ':');
        if (!colon)
            return -1;
        hl = (size_t)(colon - addr);
    }
    if (hl == 0 || hl >= host_len || strlen(colon + 1) == 0 ||
        strlen(colon + 1) >= port_len)
        return -1;
    memcpy(host, h, hl);
    host[hl] = '\0';
    strcpy(port, colon + 1);
    return 0;
}

/* Connects to addr before the deadline. Returns a blocking-free socket or -1
 * with *why set. */
static int dial(const char *addr, int64_t deadline, const char **why)
{
    char host[256];
    char port[16];
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    int fd = -1;

    if (split_addr(addr, host, sizeof host, port, sizeof port) != 0) {
        *why = "bad address (want HOST:PORT)";
        return -1;
    }
    if (getaddrinfo(host, port, &hints, &res) != 0) {
        *why = "cannot resolve host";
        return -1;
    }
    *why = "connect failed";
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        int err = 0;
        socklen_t len = sizeof err;
        fd = socket(ai->ai_family,
                    ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    ai->ai_protocol);
        if (fd < 0)
            continue;
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        if (errno == EINPROGRESS) {
            int ready = wait_fd(fd, POLLOUT, deadline);
            if (ready == 0)
                *why = "connect timed out";
            else if (ready > 0 &&
                     getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 &&
                     err == 0)
                break;
            else if (err == ECONNREFUSED)
                *why = "connection refused";
        } else if (errno == ECONNREFUSED) {
            *why = "connection refused";
        }
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

static int send_all(int fd, const uint8_t *p, size_t n, int64_t deadline,
                    const char **why)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (wait_fd(fd, POLLOUT, deadline) <= 0) {
                *why = "send timed out";
                return -1;
            }
            continue;
        }
        *why = "send failed";
        return -1;
    }
    return 0;
}

/* One connection: plain, or TLS through the engine over the same socket. */
struct wire {
    int fd;
    struct ns_tls *tls; /* owned, NULL = plain */
    char why[256];      /* a TLS failure, for *why */
};

/* Sends every ciphertext byte the session holds. */
static int wire_flush(struct wire *w, int64_t deadline, const char **why)
{
    if (w->tls == NULL || ns_tls_pending(w->tls) == 0)
        return 0;
    struct ns_buf b;
    ns_buf_init(&b);
    int rv = -1;
    if (ns_tls_drain(w->tls, &b) == 0)
        rv = send_all(w->fd, b.data, b.len, deadline, why);
    else
        *why = "out of memory";
    ns_buf_close(&b);
    return rv;
}

static int wire_send(struct wire *w, const uint8_t *p, size_t n,
                     int64_t deadline, const char **why)
{
    if (w->tls == NULL)
        return send_all(w->fd, p, n, deadline, why);
    if (ns_tls_write(w->tls, p, n) != 0) {
        *why = "TLS write failed";
        return -1;
    }
    return wire_flush(w, deadline, why);
}

/* Receives plaintext into buf[0..cap): > 0 bytes, 0 when the peer closed,
 * -1 with *why on an error or at the deadline. */
static ssize_t wire_recv(struct wire *w, uint8_t *buf, size_t cap,
                         int64_t deadline, const char **why)
{
    static uint8_t cipher[RX_CHUNK];
    for (;;) {
        if (w->tls != NULL) {
            size_t n = 0;
            int rv = ns_tls_read(w->tls, buf, cap, &n);
            if (wire_flush(w, deadline, why) != 0)
                return -1;
            if (rv == NS_ESHUTDOWN)
                return 0;
            if (rv != 0) {
                snprintf(w->why, sizeof w->why, "TLS: %s",
                         ns_tls_error(w->tls));
                *why = w->why;
                return -1;
            }
            if (n > 0)
                return (ssize_t)n;
        }
        uint8_t *dst = w->tls != NULL ? cipher : buf;
        size_t room = w->tls != NULL ? sizeof cipher : cap;
        ssize_t r = recv(w->fd, dst, room, 0);
        if (r > 0 && w->tls == NULL)
            return r;
        if (r > 0) {
            if (ns_tls_feed(w->tls, dst, (size_t)r) != 0) {
                *why = "TLS input over its limit";
                return -1;
            }
        } else if (r == 0) {
            return 0;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            if (wait_fd(w->fd, POLLIN, deadline) <= 0) {
                *why = "no reply before the timeout";
                return -1;
            }
        } else {
            *why = "receive failed";
            return -1;
        }
    }
}

/* Reads frames until the reply with this opaque arrives (other frames are
 * dropped). On success out->cmd is decoded and borrows from out->rx. Returns 0
 * or -1 with *why set. */
static int receive_reply(struct wire *w, int32_t opaque, int64_t deadline,
                         struct reply *out, const char **why)
{
    struct ns_buf *rx = &out->rx;
    for (;;) {
        size_t frame_len = 0;
        int rv = rx->len > 0 ? ns_frame_check(rx->data, rx->len, NS_FRAME_MAX,
                                              &frame_len)
                             : NS_EAGAIN;
        if (rv == 0) {
            if (ns_cmd_decode(rx->data, frame_len, &out->cmd) != 0) {
                *why = "undecodable reply frame";
                return -1;
            }
            if ((out->cmd.flag & NS_FLAG_RESPONSE) && out->cmd.opaque == opaque)
                return 0;
            ns_cmd_close(&out->cmd);
            ns_cmd_init(&out->cmd);
            memmove(rx->data, rx->data + frame_len, rx->len - frame_len);
            rx->len -= frame_len;
            continue;
        }
        if (rv != NS_EAGAIN) {
            *why = "malformed reply frame";
            return -1;
        }
        if (ns_buf_reserve(rx, RX_CHUNK) != 0) {
            *why = "out of memory";
            return -1;
        }
        ssize_t r =
            wire_recv(w, rx->data + rx->len, rx->cap - rx->len, deadline, why);
        if (r > 0) {
            rx->len += (size_t)r;
        } else if (r == 0) {
            /* what an operator sees who gave the raft or http port */
            *why = "connection closed before the reply (is it a client "
                   "port? a raft or http port closes such requests)";
            return -1;
        } else {
            return -1;
        }
    }
}

/* A TLS session for addr: the server's certificate must name its host. */
static int start_tls(const struct ctl *ctl, const char *addr, struct wire *w)
{
    char host[256];
    char port[16];
    if (split_addr(addr, host, sizeof host, port, sizeof port) != 0)
        return -1;
    return ns_tls_create(ctl->tls_ctx, ctl->tls_insecure ? NULL : host,
                         &w->tls) == 0
               ? 0
               : -1;
}

/* A reply that means "ask another node" rather than a real answer. */
static bool is_not_ready(const struct ns_cmd *c)
{
    if (c->code == NS_CODE_GO_AWAY)
        return true;
    return c->code == NS_CODE_SYSTEM_ERROR && c->remark &&
           strstr(c->remark, "not ready");
}

void ns_ctl_reply_close(struct reply *r)
{
    ns_cmd_close(&r->cmd);
    ns_buf_close(&r->rx);
}

/* Sends req to each address in turn until one answers. On 0, *out holds the
 * reply (the caller closes it with reply_close). Returns 0, EXIT_UNREACHABLE
 * (reasons printed) or EXIT_SERVER on a local failure; then *out needs no
 * close. */
/* Private codes carry a fresh signature per attempt (raftns/sign.h), so a
 * retry to another node is never refused as a replay. 0 or an exit code. */
static int sign_private(const struct ctl *ctl, struct ns_cmd *req)
{
    if (req->code < NS_CODE_PRIVATE_MIN || req->code > NS_CODE_PRIVATE_MAX ||
        req->code == NS_CODE_STATUS) {
        return 0;
    }
    uint8_t nonce[NS_SIGN_NONCE_LEN];
    if (getrandom(nonce, sizeof nonce, 0) != (ssize_t)sizeof nonce) {
        fprintf(stderr, "raftnsctl: no random bytes: %s\n", strerror(errno));
        return EXIT_SERVER;
    }
    const char *secret = ctl->secret != NULL ? ctl->secret : "";
    if (ns_sign_request(req, secret, strlen(secret), wall_ms(), nonce) != 0) {
        fprintf(stderr, "raftnsctl: cannot sign the request\n");
        return EXIT_SERVER;
    }
    return 0;
}

/* The stock ACL signature (AccessKey set by ns_ctl_call) over every other ext
 * field, the private signature included, and the body. 0 or an exit code. */
static int sign_acl(const struct ctl *ctl, struct ns_cmd *req)
{
    char sig[NS_ACL_SIG_LEN + 1];
    if (ctl->access_key == NULL || ctl->secret_key == NULL) {
        return 0;
    }
    if (ns_acl_sign(req, ctl->secret_key, false, sig) != 0 ||
        ns_cmd_ext_set(req, NS_ACL_EXT_SIGNATURE, sig) != 0) {
        fprintf(stderr, "raftnsctl: cannot sign the request\n");
        return EXIT_SERVER;
    }
    return 0;
}

static int exchange(const struct ctl *ctl, struct ns_cmd *req,
                    struct reply *out)
{
    struct ns_buf frame;
    int rv = EXIT_UNREACHABLE;

    ns_buf_init(&frame);
    ns_buf_init(&out->rx);
    ns_cmd_init(&out->cmd);
    for (size_t i = 0; i < ctl->n_addrs; i++) {
        const char *why = NULL;
        int64_t deadline = now_ms() + ctl->timeout_ms;
        req->opaque = (int32_t)(i + 1);
        ns_buf_reset(&frame);
        /* private signature first (it leaves out the ACL Signature), then
         * the ACL signature, which covers the private one */
        rv = sign_private(ctl, req);
        rv = rv != 0 ? rv : sign_acl(ctl, req);
        if (rv != 0) {
            break;
        }
        rv = EXIT_UNREACHABLE;
        if (ns_cmd_encode(req, &frame) != 0 || frame.err != 0) {
            fprintf(stderr, "raftnsctl: cannot encode the request\n");
            rv = EXIT_SERVER;
            break;
        }
        struct wire w = {.fd = dial(ctl->addrs[i], deadline, &why)};
        int fd = w.fd;
        if (fd >= 0 && ctl->tls_ctx != NULL &&
            start_tls(ctl, ctl->addrs[i], &w) != 0) {
            why = "cannot start TLS";
            close(fd);
            fd = -1;
        }
        if (fd >= 0) {
            if (wire_send(&w, frame.data, frame.len, deadline, &why) == 0 &&
                receive_reply(&w, req->opaque, deadline, out, &why) == 0) {
                if (!is_not_ready(&out->cmd)) {
                    ns_tls_destroy(w.tls);
                    close(fd);
                    rv = 0;
                    break;
                }
                why = out->cmd.code == NS_CODE_GO_AWAY ? "going away"
                                                       : "not ready";
            }
            ns_tls_destroy(w.tls);
            close(fd);
        }
        fprintf(stderr, "raftnsctl: %s: %s\n", ctl->addrs[i], why);
        ns_cmd_close(&out->cmd);
        ns_cmd_init(&out->cmd);
        ns_buf_reset(&out->rx);
    }
    if (rv == EXIT_UNREACHABLE)
        fprintf(stderr, "raftnsctl: no name server answered\n");
    if (rv != 0)
        ns_ctl_reply_close(out);
    ns_buf_close(&frame);
    return rv;
}

/* Builds a request with the given ext fields (NULL-terminated key, value
 * pairs), sends it, and turns a non-zero reply code into EXIT_SERVER (code and
 * remark on stderr). */
int ns_ctl_call(const struct ctl *ctl, int32_t code, const char *const *ext,
                const uint8_t *body, size_t body_len, struct reply *out)
{
    struct ns_cmd req;
    int rv = EXIT_SERVER;

    ns_cmd_init(&req);
    req.code = code;
    req.language = NS_LANG_OTHER;
    req.version = NS_SERVER_VERSION;
    req.ser = NS_SER_JSON;
    req.body = body;
    req.body_len = body_len;
    for (size_t i = 0; ext && ext[i]; i += 2) {
        if (ns_cmd_ext_set(&req, ext[i], ext[i + 1]) != 0) {
            fprintf(stderr, "raftnsctl: out of memory\n");
            goto err_after_req;
        }
    }
    if (ctl->access_key != NULL && ctl->secret_key != NULL &&
        ns_cmd_ext_set(&req, NS_ACL_EXT_ACCESS_KEY, ctl->access_key) != 0) {
        fprintf(stderr, "raftnsctl: out of memory\n");
        goto err_after_req;
    }
    rv = exchange(ctl, &req, out);
    if (rv != 0)
        goto err_after_req;
    if (out->cmd.code != NS_CODE_SUCCESS) {
        fprintf(stderr, "raftnsctl: error %" PRId32 " (%s): %s\n",
                out->cmd.code, code_name(out->cmd.code),
                out->cmd.remark ? out->cmd.remark : "");
        if (out->cmd.code == NS_CODE_NO_PERMISSION &&
            (ctl->secret == NULL || ctl->secret[0] == '\0') &&
            out->cmd.remark != NULL &&
            strstr(out->cmd.remark, "private request refused") != NULL) {
            /* the remark blames a wrong secret; the usual cause is none */
            fprintf(stderr, "raftnsctl: no cluster secret was given: pass "
                            "--secret S or set RAFTNS_SECRET\n");
        }
        ns_ctl_reply_close(out);
        rv = EXIT_SERVER;
        goto err_after_req;
    }
    rv = 0;
err_after_req:
    ns_cmd_close(&req);
    return rv;
}
