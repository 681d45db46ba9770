/* A minimal HTTP/1.1 server on libuv for the observer: GET /status, /metrics
 * and /healthz (HEAD too), one request per connection (Connection: close),
 * requests of at most NS_HTTP_MAX_REQUEST bytes that must arrive within
 * NS_HTTP_TIMEOUT_MS. With NS_HTTP_MAX_CONNS open, a new connection evicts the
 * oldest one still waiting for its request, so idle connections never lock a
 * probe out. It is not a general HTTP server: no bodies, no keep-alive, no
 * chunking. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/addr.h"
#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/log.h"
#include "raftns/tls.h"
#include "observe/observe_int.h"

#define BACKLOG 1024

struct ns_http_conn {
    uv_tcp_t tcp; /* first: the handle is the allocation */
    uv_timer_t timer;
    struct ns_observe *o;
    struct ns_http_conn *prev, *next;
    int n_open; /* handles of this connection not yet closed */
    bool closing;
    bool answered;
    bool held; /* counted in the observer's open handles (stop) */
    bool head; /* HEAD: the headers of the GET answer, no body */
    uv_write_t wreq;
    struct ns_tls *tls; /* owned with httpTls, else NULL */
    struct ns_buf out;
    size_t len;
    char req[NS_HTTP_MAX_REQUEST];
};

static void conn_handle_closed(uv_handle_t *h)
{
    struct ns_http_conn *c = h->data;
    if (--c->n_open > 0) {
        return;
    }
    struct ns_observe *o = c->o;
    bool held = c->held;
    if (c->prev != NULL) {
        c->prev->next = c->next;
    } else {
        o->conns = c->next;
    }
    if (c->next != NULL) {
        c->next->prev = c->prev;
    }
    o->n_conns--;
    ns_buf_close(&c->out);
    ns_tls_destroy(c->tls);
    ns_free(c);
    if (held) {
        ns_observe_handle_closed((uv_handle_t *)&o->listener);
    }
}

static void conn_close(struct ns_http_conn *c)
{
    if (c->closing) {
        return;
    }
    c->closing = true;
    c->o->n_http_live--;
    uv_close((uv_handle_t *)&c->timer, conn_handle_closed);
    uv_close((uv_handle_t *)&c->tcp, conn_handle_closed);
}

static void write_cb(uv_write_t *req, int status)
{
    struct ns_http_conn *c = req->data;
    (void)status;
    conn_close(c);
}

/* HTTPS: replaces the response in c->out by its records and a close_notify. */
static int seal(struct ns_http_conn *c)
{
    struct ns_buf wire;
    ns_buf_init(&wire);
    int rv = ns_tls_write(c->tls, c->out.data, c->out.len);
    ns_tls_shutdown(c->tls);
    if (rv == 0) {
        rv = ns_tls_drain(c->tls, &wire);
    }
    ns_buf_close(&c->out);
    c->out = wire;
    return rv;
}

struct hs_write {
    uv_write_t req;
    uint8_t *data; /* owned */
};

static void hs_written(uv_write_t *req, int status)
{
    struct hs_write *w = (struct hs_write *)req;
    (void)status; /* a failed write ends in a read error or the timeout */
    ns_free(w->data);
    ns_free(w);
}

/* HTTPS: sends the handshake records the session has ready. */
static void send_handshake(struct ns_http_conn *c)
{
    if (ns_tls_pending(c->tls) == 0) {
        return;
    }
    struct ns_buf wire;
    ns_buf_init(&wire);
    struct hs_write *w = ns_calloc(1, sizeof *w);
    if (w == NULL || ns_tls_drain(c->tls, &wire) != 0) {
        ns_free(w);
        ns_buf_close(&wire);
        conn_close(c);
        return;
    }
    size_t len = 0;
    w->data = ns_buf_take(&wire, &len);
    uv_buf_t b = uv_buf_init((char *)w->data, (unsigned)len);
    if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, hs_written) != 0) {
        hs_written(&w->req, 0);
        conn_close(c);
    }
}

static void respond(struct ns_http_conn *c, int code, const char *reason,
                    const char *type, const struct ns_buf *body)
{
    size_t body_len = body != NULL ? body->len : 0;
    c->answered = true;
    uv_read_stop((uv_stream_t *)&c->tcp);
    ns_buf_printf(&c->out,
                  "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
                  "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                  code, reason, type, body_len);
    if (body_len > 0 && !c->head) {
        ns_buf_append(&c->out, body->data, body->len);
    }
    if (c->out.err != 0 || (c->tls != NULL && seal(c) != 0)) {
        conn_close(c);
        return;
    }
    uv_buf_t b = uv_buf_init((char *)c->out.data, (unsigned)c->out.len);
    c->wreq.data = c;
    if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, write_cb) != 0) {
        conn_close(c);
    }
}

static void respond_text(struct ns_http_conn *c, int code, const char *reason,
                         const char *text)
{
    struct ns_buf body;
    ns_buf_init(&body);
    ns_buf_append_str(&body, text);
    respond(c, code, reason, "text/plain; charset=utf-8", &body);
    ns_buf_close(&body);
}

static void route_request(struct ns_http_conn *c, const char *method,
                          const char *path)
{
    struct ns_observe *o = c->o;
    struct ns_buf body;
    ns_buf_init(&body);
    /* load balancers probe with HEAD: same status and headers as GET */
    c->head = strcmp(method, "HEAD") == 0;
    if (strcmp(method, "GET") != 0 && !c->head) {
        respond_text(c, 405, "Method Not Allowed", "GET or HEAD only\n");
    } else if (strcmp(path, "/status") == 0) {
        if (ns_observe_status_json(o, &body) == 0) {
            ns_buf_append_str(&body, "\n");
            respond(c, 200, "OK", "application/json", &body);
        } else {
            respond_text(c, 500, "Internal Server Error", "out of memory\n");
        }
    } else if (strcmp(path, "/metrics") == 0) {
        ns_metrics_encode(&body);
        ns_observe_gauges(o, &body);
        ns_observe_ops_metrics(o, &body);
        respond(c, 200, "OK", "text/plain; version=0.0.4; charset=utf-8",
                &body);
    } else if (strcmp(path, "/healthz") == 0) {
        if (ns_observe_is_healthy(o)) {
            respond_text(c, 200, "OK", "ok\n");
        } else if (ns_observe_is_diverged(o)) {
            respond_text(c, 503, "Service Unavailable", "diverged\n");
        } else {
            respond_text(c, 503, "Service Unavailable", "not ready\n");
        }
    } else {
        respond_text(c, 404, "Not Found", "try /status, /metrics, /healthz\n");
    }
    ns_buf_close(&body);
}

/* Parses the request line once the header block is complete. */
static void try_parse(struct ns_http_conn *c)
{
    c->req[c->len] = '\0';
    if (strstr(c->req, "\r\n\r\n") == NULL && strstr(c->req, "\n\n") == NULL) {
        if (c->len >= NS_HTTP_MAX_REQUEST - 1) {
            respond_text(c, 431, "Request Header Fields Too Large",
                         "request too large\n");
        }
        return;
    }
    char method[16], path[256], version[16];
    if (sscanf(c->req, "%15s %255s %15s", method, path, version) != 3 ||
        strncmp(version, "HTTP/1.", 7) != 0) {
        respond_text(c, 400, "Bad Request", "bad request line\n");
        return;
    }
    char *query = strchr(path, '?');
    if (query != NULL) {
        *query = '\0';
    }
    route_request(c, method, path);
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct ns_http_conn *c = h->data;
    (void)suggested;
    if (c->tls != NULL) { /* ciphertext: fed to the session at once */
        buf->base = (char *)c->o->scratch;
        buf->len = sizeof c->o->scratch;
        return;
    }
    /* one byte kept for the terminating NUL */
    buf->base = c->req + c->len;
    buf->len = NS_HTTP_MAX_REQUEST - 1 - c->len;
}

/* HTTPS: decrypts into the request buffer. True when c was closed. */
static bool https_input(struct ns_http_conn *c, const uint8_t *p, size_t n)
{
    size_t got = 0;
    int rv = ns_tls_feed(c->tls, p, n);
    if (rv == 0) {
        rv = ns_tls_read(c->tls, (uint8_t *)c->req + c->len,
                         NS_HTTP_MAX_REQUEST - 1 - c->len, &got);
    }
    if (rv != 0) {
        NS_LOG(NS_LOG_DEBUG, "http: TLS: %s",
               rv == NS_EPROTO ? ns_tls_error(c->tls) : ns_strerror(rv));
        conn_close(c);
        return true;
    }
    c->len += got;
    send_handshake(c);
    return c->closing;
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct ns_http_conn *c = s->data;
    (void)buf;
    if (c->closing || c->answered) {
        return;
    }
    if (nread < 0) {
        conn_close(c);
        return;
    }
    if (c->tls == NULL) {
        c->len += (size_t)nread;
    } else if (https_input(c, (const uint8_t *)buf->base, (size_t)nread)) {
        return;
    }
    try_parse(c);
}

static void timeout_cb(uv_timer_t *t)
{
    struct ns_http_conn *c = t->data;
    if (!c->answered) {
        conn_close(c);
    }
}

/* Closes the oldest connection that has not sent its request yet (the list is
 * newest first). */
static void evict_oldest_idle(struct ns_observe *o)
{
    struct ns_http_conn *oldest = NULL;
    for (struct ns_http_conn *c = o->conns; c != NULL; c = c->next) {
        if (!c->closing && !c->answered) {
            oldest = c;
        }
    }
    if (oldest != NULL) {
        ns_metrics_limit(NS_LIMIT_HTTP_EVICTED);
        conn_close(oldest);
    }
}

static void on_connection(uv_stream_t *listener, int status)
{
    struct ns_observe *o = listener->data;
    if (status != 0 || o->stopping) {
        return;
    }
    struct ns_http_conn *c = ns_calloc(1, sizeof *c);
    if (c == NULL) {
        NS_LOG(NS_LOG_WARN, "http: out of memory accepting a connection");
        return;
    }
    c->o = o;
    ns_buf_init(&c->out);
    uv_tcp_init(o->loop, &c->tcp);
    uv_timer_init(o->loop, &c->timer);
    c->tcp.data = c;
    c->timer.data = c;
    c->n_open = 2;
    c->next = o->conns;
    if (o->conns != NULL) {
        o->conns->prev = c;
    }
    o->conns = c;
    o->n_conns++;
    o->n_http_live++;
    if (uv_accept(listener, (uv_stream_t *)&c->tcp) != 0) {
        conn_close(c);
        return;
    }
    struct ns_tls_ctx *https = ns_server_https_ctx(o->srv);
    if (https != NULL && ns_tls_create(https, NULL, &c->tls) != 0) {
        conn_close(c);
        return;
    }
    if (o->n_http_live > NS_HTTP_MAX_CONNS) {
        evict_oldest_idle(o);
    }
    uv_timer_start(&c->timer, timeout_cb, NS_HTTP_TIMEOUT_MS, 0);
    if (uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb) != 0) {
        conn_close(c);
    }
}

int ns_http_start(struct ns_observe *o)
{
    struct sockaddr_in sa;
    if (ns_addr_parse_ipv4(o->http_addr, &sa) != 0) {
        NS_LOG(NS_LOG_ERROR, "http: bad address %s (want IPv4 a.b.c.d:port)",
               o->http_addr);
        return NS_EINVAL;
    }
    uv_tcp_init(o->loop, &o->listener);
    o->listener.data = o;
    o->n_open_handles++;
    int rv = uv_tcp_bind(&o->listener, (const struct sockaddr *)&sa, 0);
    if (rv == 0) {
        rv = uv_listen((uv_stream_t *)&o->listener, BACKLOG, on_connection);
    }
    if (rv != 0) {
        NS_LOG(NS_LOG_ERROR, "http: cannot listen on %s: %s", o->http_addr,
               uv_strerror(rv));
        return NS_EIO;
    }
    struct sockaddr_in bound;
    int len = sizeof bound;
    uv_tcp_getsockname(&o->listener, (struct sockaddr *)&bound, &len);
    o->http_port = ntohs(bound.sin_port);
    char ip[32] = "?";
    uv_ip4_name(&bound, ip, sizeof ip);
    NS_LOG(NS_LOG_INFO, "http: listening on %s:%d (/status /metrics /healthz)",
           ip, o->http_port);
    return 0;
}

void ns_http_stop(struct ns_observe *o)
{
    if (o->listener.data == o) {
        uv_close((uv_handle_t *)&o->listener, ns_observe_handle_closed);
    }
    /* Each connection (closing ones too) holds the observer open until it
     * is freed. */
    for (struct ns_http_conn *c = o->conns; c != NULL; c = c->next) {
        c->held = true;
        o->n_open_handles++;
        conn_close(c);
    }
}
