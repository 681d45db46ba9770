/* A simulated cluster of full raftns nodes for the cluster tier: N servers
 * of one raft_fixture, each with the production node (ns_node_create_over),
 * server, cluster, gateway, liveness and observer, on virtual time. The
 * fixture's clock is the only monotonic clock; every step runs one raft event
 * and then what the nodes' handles and the servers' timers would have run by
 * then (ns_node_tick, ns_server_tick, ns_observe_tick). Node-to-node requests
 * go through an in-memory network (struct ns_peer over sink connections) that
 * delays by a fixed latency, can cut a node off and can drop the next FORWARD
 * answer; clients are sink connections that keep every reply with the
 * replying node's applied index at that moment. Deterministic: no socket and
 * no sleep; the one thread pool (registrations over 256 KiB) is waited for
 * with virtual time standing still (sim_pump). The wall clock is still read
 * by the nodes for command timestamps and signatures, never for a decision
 * of the schedule. White-box: it reaches into the rooms' structs (server,
 * gateway, observer) where no public call exists. Header-only (each test is
 * its own executable); include after cmocka.h. Not a model of TCP: a lost
 * message is never reported, the call times out (as a silent partition
 * does). */
#ifndef RAFTNS_TEST_SIM_H
#define RAFTNS_TEST_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <raft.h>
#include <raft/fixture.h>
#include <uv.h>

#include "net/net.h"
#include "net/peer.h"
#include "observe/observe_int.h"
#include "raftns/observe.h"
#include "raftns/metrics.h"
#include "raftns/alloc.h"
#include "raftns/buf.h"
#include "raftns/clock.h"
#include "raftns/cluster_config.h"
#include "raftns/codes.h"
#include "raftns/err.h"
#include "raftns/command.h"
#include "raftns/config.h"
#include "raftns/fsm.h"
#include "raftns/json.h"
#include "raftns/kv.h"
#include "raftns/log.h"
#include "raftns/node.h"
#include "raftns/remoting.h"
#include "raftns/route.h"
#include "raftns/server.h"
#include "raftns/sign.h"
#include "server/server_int.h"

#define SIM_MAX 7
#define SIM_SECRET "sim-cluster-secret"
/* Virtual time starts here, so that no reading is 0 (a "never" for some
 * fields of the server). */
#define SIM_T0 1000000u
/* One way, node to node. */
#define SIM_LATENCY_MS 5
#define SIM_MAX_REPLIES 64
#define SIM_MAX_APPLIED 512
#define SIM_MAX_CLIENTS 64
#define SIM_MAX_SENT 128

struct sim;

/* A oneway frame a node sent to an address that is no node (a broker's:
 * the controller's 1008). */
struct sim_sent {
    unsigned from;
    char addr[64];
    uint8_t *frame; /* owned */
    size_t len;
    uint64_t at;
};

/* One applied command entry of one node (its apply hook). */
struct sim_applied {
    uint64_t index;
    int type;  /* enum ns_command_type */
    int reqid; /* the request-id verdict, enum ns_reqid_verdict */
};

struct sim_reply {
    uint8_t *frame; /* owned */
    size_t len;
    int32_t opaque;
    uint64_t applied; /* the node's last applied index when it was sent */
    bool taken;
};

/* A client of one node: a connection with no socket. */
struct sim_client {
    struct sim *sim;
    unsigned node;
    struct ns_conn *conn; /* NULL once closed */
    struct ns_conn_sink sink;
    struct ns_buf in;
    struct sim_reply replies[SIM_MAX_REPLIES];
    unsigned n_replies;
    int32_t next_opaque;
};

/* Requests of node from to node to's client port: one connection on to's
 * server, opened at the first request. */
struct sim_link {
    struct sim *sim;
    unsigned from, to;
    struct ns_conn *conn;
    struct ns_conn_sink sink;
    struct ns_buf in; /* reply bytes not cut yet */
};

struct sim_call {
    int32_t opaque;
    uint64_t deadline;
    ns_peer_reply_cb cb;
    void *arg;
    struct sim_call *next;
};

/* The leader connection of one node over the in-memory network. */
struct sim_peer {
    struct ns_peer base; /* first */
    struct sim *sim;
    unsigned from;
    char *addr; /* owned, NULL = nowhere */
    struct sim_call *calls;
    int32_t next_opaque;
    struct sim_peer *next; /* in sim->peers */
};

/* A frame in flight: a request to link->to's server, or a reply back to
 * link->from's peer. */
struct sim_msg {
    struct sim_msg *next;
    uint64_t at, seq;
    struct sim_link *link;
    bool reply;
    uint8_t *bytes; /* owned */
    size_t len;
};

struct sim_node {
    struct sim *sim;
    unsigned i;
    uint64_t id;
    char client_addr[32];
    char raft_addr[32];
    struct ns_state state;
    struct ns_node *node;
    struct ns_server *server;
    struct ns_observe *observe; /* checkpoints, verdicts, state copies */
    struct ns_peer_factory peers;
    bool up;      /* created and not killed */
    bool started; /* has a node and server */
    struct sim_applied applied[SIM_MAX_APPLIED];
    unsigned n_applied;
};

struct sim {
    struct raft_fixture f;
    uv_loop_t loop; /* the servers' handles: never run until teardown */
    struct ns_clock clock;
    struct ns_cluster_config file;
    unsigned n;
    struct sim_node nodes[SIM_MAX];
    struct sim_link links[SIM_MAX][SIM_MAX];
    bool cut[SIM_MAX];    /* node i exchanges nothing with any other */
    struct sim_msg *msgs; /* by (at, seq) */
    uint64_t seq;
    struct sim_peer *peers;
    struct ns_conn *closed[64]; /* sink connections to free after the step */
    unsigned n_closed;
    unsigned n_dropped;
    uint64_t next_observe_ms;
    unsigned checkpoint_entries; /* the observers': a CHECKPOINT every N */
    unsigned snapshot_threshold; /* the nodes' (0: the default) */
    struct ns_acl_settings acl;  /* every server's */
    size_t n_members;            /* member records sim_settle waits for */
    struct sim_client clients[SIM_MAX_CLIENTS];
    unsigned n_clients;
    /* Test hook: drop the next n replies to a FORWARD (0 = none) */
    unsigned drop_forward_replies;
    struct ns_waits waits;    /* every server's (zero fields = the defaults) */
    struct ns_props settings; /* every server's start-up settings */
    struct sim_sent sent[SIM_MAX_SENT];
    unsigned n_sent;
};

static inline uint64_t sim_now(struct sim *s)
{
    return SIM_T0 + raft_fixture_time(&s->f);
}

static inline uint64_t sim_clock_now(void *arg)
{
    return sim_now(arg);
}

static inline bool sim_linked(struct sim *s, unsigned a, unsigned b)
{
    return s->nodes[a].up && s->nodes[b].up && !s->cut[a] && !s->cut[b];
}

/* --- the network --- */

static inline void sim_send(struct sim *s, struct sim_link *l, bool reply,
                            const uint8_t *p, size_t n)
{
    if (!sim_linked(s, l->from, l->to)) {
        s->n_dropped++;
        return;
    }
    struct sim_msg *m = calloc(1, sizeof *m);
    assert_non_null(m);
    m->at = sim_now(s) + SIM_LATENCY_MS;
    m->seq = ++s->seq;
    m->link = l;
    m->reply = reply;
    m->bytes = malloc(n);
    assert_non_null(m->bytes);
    memcpy(m->bytes, p, n);
    m->len = n;
    struct sim_msg **pp = &s->msgs;
    while (*pp != NULL && (*pp)->at <= m->at) {
        pp = &(*pp)->next;
    }
    m->next = *pp;
    *pp = m;
}

static inline void sim_link_write(void *arg, const uint8_t *p, size_t n)
{
    struct sim_link *l = arg;
    assert_int_equal(ns_buf_append(&l->in, p, n), 0);
    size_t len = 0;
    size_t off = 0;
    while (ns_frame_check(l->in.data + off, l->in.len - off, NS_FRAME_MAX,
                          &len) == 0) {
        sim_send(l->sim, l, true, l->in.data + off, len);
        off += len;
    }
    memmove(l->in.data, l->in.data + off, l->in.len - off);
    l->in.len -= off;
}

static inline void sim_conn_closed(struct sim *s, struct ns_conn *c)
{
    assert_true(s->n_closed < sizeof s->closed / sizeof s->closed[0]);
    s->closed[s->n_closed++] = c;
}

static inline void sim_link_closed(void *arg, struct ns_conn *c)
{
    struct sim_link *l = arg;
    l->conn = NULL;
    ns_buf_reset(&l->in);
    sim_conn_closed(l->sim, c);
}

static inline struct sim_peer *sim_peer_of(struct sim *s, unsigned from)
{
    for (struct sim_peer *p = s->peers; p != NULL; p = p->next) {
        if (p->from == from) {
            return p;
        }
    }
    return NULL;
}

static inline void sim_deliver(struct sim *s, struct sim_msg *m)
{
    struct sim_link *l = m->link;
    if (!sim_linked(s, l->from, l->to)) {
        s->n_dropped++;
        return;
    }
    if (!m->reply) {
        struct sim_node *to = &s->nodes[l->to];
        if (l->conn == NULL) {
            char peer[32];
            snprintf(peer, sizeof peer, "10.0.0.%u:7000", l->from + 1);
            assert_int_equal(
                ns_conn_open_sink(&to->server->net, peer, &l->sink, &l->conn),
                0);
        }
        ns_conn_input(l->conn, m->bytes, m->len);
        return;
    }
    struct sim_peer *p = sim_peer_of(s, l->from);
    struct ns_cmd reply;
    assert_int_equal(ns_cmd_decode(m->bytes, m->len, &reply), 0);
    struct sim_call **cc = p != NULL ? &p->calls : NULL;
    while (cc != NULL && *cc != NULL && (*cc)->opaque != reply.opaque) {
        cc = &(*cc)->next;
    }
    if (cc != NULL && *cc != NULL) {
        struct sim_call *c = *cc;
        *cc = c->next;
        c->cb(c->arg, 0, &reply);
        free(c);
    }
    ns_cmd_close(&reply);
}

/* --- struct ns_peer over the network --- */

static inline void sim_peer_fail(struct sim_peer *p, int status)
{
    struct sim_call *c = p->calls;
    p->calls = NULL;
    while (c != NULL) {
        struct sim_call *next = c->next;
        c->cb(c->arg, status, NULL);
        free(c);
        c = next;
    }
}

static inline int sim_peer_set_addr(struct ns_peer *base, const char *addr)
{
    struct sim_peer *p = (struct sim_peer *)base;
    if (addr != NULL && p->addr != NULL && strcmp(addr, p->addr) == 0) {
        return 0;
    }
    sim_peer_fail(p, NS_EIO); /* as a TCP peer drops its connection */
    free(p->addr);
    p->addr = addr != NULL ? strdup(addr) : NULL;
    return 0;
}

static inline const char *sim_peer_addr(const struct ns_peer *base)
{
    return ((const struct sim_peer *)base)->addr;
}

static inline bool sim_peer_is_connected(const struct ns_peer *base)
{
    return ((const struct sim_peer *)base)->addr != NULL;
}

static inline int sim_peer_send(struct sim_peer *p, struct ns_cmd *req)
{
    struct sim *s = p->sim;
    unsigned to = s->n;
    for (unsigned i = 0; p->addr != NULL && i < s->n; i++) {
        if (strcmp(s->nodes[i].client_addr, p->addr) == 0) {
            to = i;
        }
    }
    if (to == s->n && p->addr != NULL && (req->flag & NS_FLAG_ONEWAY) &&
        s->nodes[p->from].up && !s->cut[p->from]) {
        assert_true(s->n_sent < SIM_MAX_SENT);
        struct sim_sent *m = &s->sent[s->n_sent++];
        struct ns_buf b;
        ns_buf_init(&b);
        assert_int_equal(ns_cmd_encode(req, &b), 0);
        m->from = p->from;
        snprintf(m->addr, sizeof m->addr, "%s", p->addr);
        m->frame = malloc(b.len);
        assert_non_null(m->frame);
        memcpy(m->frame, b.data, b.len);
        m->len = b.len;
        ns_buf_close(&b);
        m->at = sim_now(s);
        return 0;
    }
    if (to == s->n) {
        return NS_ENOTFOUND;
    }
    req->opaque = p->next_opaque++;
    struct ns_buf b;
    ns_buf_init(&b);
    assert_int_equal(ns_cmd_encode(req, &b), 0);
    sim_send(s, &s->links[p->from][to], false, b.data, b.len);
    ns_buf_close(&b);
    return 0;
}

static inline int sim_peer_request(struct ns_peer *base, struct ns_cmd *req,
                                   uint64_t timeout_ms, ns_peer_reply_cb cb,
                                   void *arg)
{
    struct sim_peer *p = (struct sim_peer *)base;
    req->flag = 0;
    int rv = sim_peer_send(p, req);
    if (rv != 0) {
        return rv;
    }
    struct sim_call *c = calloc(1, sizeof *c);
    assert_non_null(c);
    c->opaque = req->opaque;
    c->deadline = sim_now(p->sim) + timeout_ms;
    c->cb = cb;
    c->arg = arg;
    c->next = p->calls;
    p->calls = c;
    return 0;
}

static inline int sim_peer_oneway(struct ns_peer *base, struct ns_cmd *req)
{
    req->flag = NS_FLAG_ONEWAY;
    return sim_peer_send((struct sim_peer *)base, req);
}

static inline void sim_peer_close(struct ns_peer *base, ns_peer_close_cb cb,
                                  void *arg)
{
    struct sim_peer *p = (struct sim_peer *)base;
    struct sim_peer **pp = &p->sim->peers;
    while (*pp != p) {
        pp = &(*pp)->next;
    }
    *pp = p->next;
    sim_peer_fail(p, NS_ESHUTDOWN);
    free(p->addr);
    free(p);
    if (cb != NULL) {
        cb(arg);
    }
}

static const struct ns_peer_ops sim_peer_ops = {
    .set_addr = sim_peer_set_addr,
    .addr = sim_peer_addr,
    .is_connected = sim_peer_is_connected,
    .request = sim_peer_request,
    .oneway = sim_peer_oneway,
    .close = sim_peer_close,
};

static inline int sim_peer_create(void *arg, struct ns_peer **out)
{
    struct sim_node *nd = arg;
    struct sim_peer *p = calloc(1, sizeof *p);
    assert_non_null(p);
    p->base.ops = &sim_peer_ops;
    p->sim = nd->sim;
    p->from = nd->i;
    p->next_opaque = 1;
    p->next = nd->sim->peers;
    nd->sim->peers = p;
    *out = &p->base;
    return 0;
}

static inline void sim_peer_expire(struct sim_peer *p, uint64_t now)
{
    struct sim_call **cc = &p->calls;
    while (*cc != NULL) {
        struct sim_call *c = *cc;
        if (c->deadline > now) {
            cc = &c->next;
            continue;
        }
        *cc = c->next;
        c->cb(c->arg, NS_ETIMEDOUT, NULL);
        free(c);
        cc = &p->calls; /* the callback may have changed the list */
    }
}

/* --- nodes --- */

static inline bool sim_on_applied(void *arg, uint64_t index, const uint8_t *cmd,
                                  size_t len, const struct ns_apply_result *res)
{
    struct sim_node *nd = arg;
    ns_checkpoint_on_apply(nd->observe->ig, index, cmd, len, res);
    assert_true(nd->n_applied < SIM_MAX_APPLIED);
    struct sim_applied *a = &nd->applied[nd->n_applied++];
    a->index = index;
    a->type = len > 1 ? cmd[1] : -1;
    a->reqid = res != NULL ? (int)res->reqid : -1;
    return false;
}

/* Node i's node and server over fixture server i (created and started). */
static inline void sim_node_start(struct sim *s, unsigned i)
{
    struct sim_node *nd = &s->nodes[i];
    struct ns_node_config ncfg = {.remote_ready = true,
                                  .snapshot_threshold = s->snapshot_threshold};
    assert_int_equal(ns_node_create_over(raft_fixture_get(&s->f, i), &ncfg,
                                         &s->clock, &nd->state, &nd->node),
                     0);
    struct ns_server_config scfg = {
        .client_addr = nd->client_addr,
        .id = nd->id,
        .secret = SIM_SECRET,
        .cluster = &s->file,
        .clock = &s->clock,
        .acl = &s->acl,
        .waits = s->waits,
        .settings = &s->settings,
    };
    assert_int_equal(
        ns_server_create(&s->loop, &scfg, &nd->state, nd->node, &nd->server),
        0);
    struct ns_observe_config ocfg = {
        .checkpoint_entries =
            s->checkpoint_entries ? s->checkpoint_entries : 20,
    };
    assert_int_equal(ns_observe_create(&s->loop, &ocfg, &nd->state, nd->node,
                                       nd->server, &nd->observe),
                     0);
    assert_int_equal(ns_observe_start(nd->observe), 0);
    /* sim_after ticks the observer; its own timer must not run when the
     * loop is pumped for off-loop work (sim_pump) */
    uv_timer_stop(&nd->observe->timer);
    /* after the observer's: the sim's hook calls it first */
    ns_node_set_apply_hook(nd->node, sim_on_applied, nd);
    nd->peers.create = sim_peer_create;
    nd->peers.arg = nd;
    assert_int_equal(ns_node_start(nd->node), 0);
    assert_int_equal(ns_server_start_driven(nd->server, &nd->peers), 0);
    nd->up = nd->started = true;
}

static inline void sim_node_init(struct sim *s, unsigned i)
{
    struct sim_node *nd = &s->nodes[i];
    nd->sim = s;
    nd->i = i;
    nd->id = (uint64_t)i + 1;
    snprintf(nd->client_addr, sizeof nd->client_addr, "10.0.0.%u:9876", i + 1);
    snprintf(nd->raft_addr, sizeof nd->raft_addr, "10.0.0.%u:9000", i + 1);
    assert_int_equal(ns_state_init(&nd->state), 0);
    for (unsigned j = 0; j < SIM_MAX; j++) {
        struct sim_link *l = &s->links[j][i];
        l->sim = s;
        l->from = j;
        l->to = i;
        l->sink.write = sim_link_write;
        l->sink.closed = sim_link_closed;
        l->sink.arg = l;
        ns_buf_init(&l->in);
    }
}

/* The fixture's FSM slot until the node installs its adapter. */
static struct raft_fsm sim_placeholder_fsm = {.version = 1};

/* Settings of a simulated cluster (all zero: the defaults). */
struct sim_opts {
    unsigned checkpoint_entries; /* 0 = a CHECKPOINT every 20 commands */
    unsigned snapshot_threshold; /* 0 = the nodes' default */
    bool acl; /* aclEnable on every node (anonymous reads allowed) */
    /* the cluster file's "acl" accounts (JSON array text), or NULL */
    const char *acl_accounts;
    struct ns_waits waits; /* zero fields = the defaults (raftns/waits.h) */
    /* every server's start-up settings (properties text, --set), or NULL */
    const char *settings;
};

/* n voters (node ids 1..n) out of n_file members of the cluster file (the
 * rest join with MEMBER_ADD, sim_grow); servers started, no leader yet.
 * opts may be NULL. */
static inline void sim_setup_with(struct sim *s, unsigned n, unsigned n_file,
                                  const struct sim_opts *opts)
{
    memset(s, 0, sizeof *s);
    ns_props_init(&s->settings);
    if (opts != NULL && opts->settings != NULL) {
        assert_int_equal(ns_props_parse(opts->settings, strlen(opts->settings),
                                        &s->settings),
                         0);
    }
    if (opts != NULL) {
        s->checkpoint_entries = opts->checkpoint_entries;
        s->snapshot_threshold = opts->snapshot_threshold;
        s->acl.enable = opts->acl;
        s->acl.anonymous_read = true;
        s->waits = opts->waits;
    }
    ns_log_threshold = NS_LOG_ERROR;
    ns_json_use_ns_alloc();
    assert_true(n_file <= SIM_MAX && n <= n_file);
    s->n = n;
    s->n_members = n;
    s->clock.now_ms = sim_clock_now;
    s->clock.arg = s;
    assert_int_equal(uv_loop_init(&s->loop), 0);
    assert_int_equal(raft_fixture_initialize(&s->f), 0);
    char json[2048];
    size_t off = (size_t)snprintf(json, sizeof json,
                                  "{\"secret\":\"" SIM_SECRET "\",\"nodes\":[");
    for (unsigned i = 0; i < n_file; i++) {
        sim_node_init(s, i);
        off +=
            (size_t)snprintf(json + off, sizeof json - off,
                             "%s{\"id\":%u,\"raft\":\"%s\",\"client\":\"%s\","
                             "\"bootstrap\":%s}",
                             i > 0 ? "," : "", i + 1, s->nodes[i].raft_addr,
                             s->nodes[i].client_addr, i < n ? "true" : "false");
    }
    off += (size_t)snprintf(json + off, sizeof json - off, "]");
    if (opts != NULL && opts->acl_accounts != NULL) {
        off +=
            (size_t)snprintf(json + off, sizeof json - off,
                             ",\"acl\":{\"accounts\":%s}", opts->acl_accounts);
    }
    off += (size_t)snprintf(json + off, sizeof json - off, "}");
    assert_true(off < sizeof json);
    char err[256];
    ns_cluster_config_init(&s->file);
    assert_int_equal(
        ns_cluster_config_parse(json, off, &s->file, err, sizeof err), 0);
    for (unsigned i = 0; i < n; i++) {
        assert_int_equal(raft_fixture_grow(&s->f, &sim_placeholder_fsm), 0);
    }
    struct raft_configuration conf;
    assert_int_equal(raft_fixture_configuration(&s->f, n, &conf), 0);
    assert_int_equal(raft_fixture_bootstrap(&s->f, &conf), 0);
    raft_configuration_close(&conf);
    for (unsigned i = 0; i < n; i++) {
        sim_node_start(s, i);
    }
    assert_int_equal(raft_fixture_start(&s->f), 0);
}

static inline void sim_setup(struct sim *s, unsigned n, unsigned n_file)
{
    sim_setup_with(s, n, n_file, NULL);
}

/* --- stepping --- */

/* Large registrations are decoded on libuv's thread pool
 * (gateway/register_async.c): the loop runs, without virtual time moving,
 * until every one is back, so that their outcome lands at a fixed point of
 * the schedule. No timer of the servers runs on the loop (driven). */
static inline void sim_pump(struct sim *s)
{
    for (;;) {
        bool busy = false;
        for (unsigned i = 0; i < s->n; i++) {
            const struct ns_gateway *gw = &s->nodes[i].server->gw;
            busy = busy || (s->nodes[i].up &&
                            (gw->reg_running != NULL || gw->reg_queue != NULL));
        }
        if (!busy) {
            return;
        }
        uv_run(&s->loop, UV_RUN_ONCE);
    }
}

/* What runs between two raft events: the nodes' handles, the messages that
 * are due, the servers' timers and flushes, the peers' timeouts. */
static inline void sim_after(struct sim *s)
{
    uint64_t now = sim_now(s);
    for (unsigned i = 0; i < s->n; i++) {
        if (s->nodes[i].up) {
            ns_node_tick(s->nodes[i].node);
        }
    }
    sim_pump(s);
    while (s->msgs != NULL && s->msgs->at <= now) {
        struct sim_msg *m = s->msgs;
        s->msgs = m->next;
        bool drop = false;
        if (m->reply && s->drop_forward_replies > 0) {
            struct ns_cmd r;
            assert_int_equal(ns_cmd_decode(m->bytes, m->len, &r), 0);
            drop = ns_cmd_ext_find(&r, NS_EXT_RES_TYPE) != NULL;
            ns_cmd_close(&r);
            s->drop_forward_replies -= drop ? 1 : 0;
        }
        if (!drop) {
            sim_deliver(s, m);
        }
        free(m->bytes);
        free(m);
    }
    for (unsigned i = 0; i < s->n; i++) {
        if (s->nodes[i].up) {
            ns_server_tick(s->nodes[i].server);
        }
    }
    if (now >= s->next_observe_ms) {
        s->next_observe_ms = now + NS_CKPT_TICK_MS;
        for (unsigned i = 0; i < s->n; i++) {
            if (s->nodes[i].up) {
                ns_observe_tick(s->nodes[i].observe);
            }
        }
    }
    for (struct sim_peer *p = s->peers; p != NULL; p = p->next) {
        if (s->nodes[p->from].up) {
            sim_peer_expire(p, now);
        }
    }
    while (s->n_closed > 0) {
        ns_conn_free_sink(s->closed[--s->n_closed]);
    }
}

static inline void sim_step(struct sim *s)
{
    raft_fixture_step(&s->f);
    sim_after(s);
}

/* Steps until pred(s, arg) holds or max_ms of virtual time passed; returns
 * pred's last value. */
static inline bool sim_run_until(struct sim *s,
                                 bool (*pred)(struct sim *, void *), void *arg,
                                 uint64_t max_ms)
{
    uint64_t end = sim_now(s) + max_ms;
    while (!pred(s, arg) && sim_now(s) < end) {
        sim_step(s);
    }
    return pred(s, arg);
}

static inline void sim_run_for(struct sim *s, uint64_t ms)
{
    uint64_t end = sim_now(s) + ms;
    while (sim_now(s) < end) {
        sim_step(s);
    }
}

/* The ready leader (its barrier applied), or -1. */
static inline int sim_leader(struct sim *s)
{
    for (unsigned i = 0; i < s->n; i++) {
        if (s->nodes[i].up && !s->cut[i] &&
            ns_node_is_leader(s->nodes[i].node)) {
            return (int)i;
        }
    }
    return -1;
}

static inline bool sim_pred_stable(struct sim *s, void *arg)
{
    (void)arg;
    int l = sim_leader(s);
    if (l < 0) {
        return false;
    }
    uint64_t applied = ns_node_last_applied(s->nodes[l].node);
    for (unsigned i = 0; i < s->n; i++) {
        struct sim_node *nd = &s->nodes[i];
        if (!nd->up || s->cut[i]) {
            continue;
        }
        if (!ns_node_is_ready(nd->node) ||
            ns_node_leader_id(nd->node) != s->nodes[l].id ||
            ns_node_last_applied(nd->node) != applied ||
            nd->state.n_members != s->n_members) {
            return false;
        }
    }
    return true;
}

static inline bool sim_pred_has_leader(struct sim *s, void *arg)
{
    (void)arg;
    return sim_leader(s) >= 0;
}

/* Runs until one ready leader is known by every reachable node, each of
 * which is ready and has applied what it applied (the members recorded).
 * Returns the leader. */
static inline unsigned sim_settle(struct sim *s)
{
    assert_true(sim_run_until(s, sim_pred_stable, NULL, 30000));
    return (unsigned)sim_leader(s);
}

/* A follower of leader l (the k-th, k from 0). */
static inline unsigned sim_follower(struct sim *s, unsigned l, unsigned k)
{
    for (unsigned i = 0; i < s->n; i++) {
        if (i != l && s->nodes[i].up && k-- == 0) {
            return i;
        }
    }
    fail_msg("no follower %u", k);
    return 0;
}

/* --- faults --- */

/* Node i exchanges nothing with any other (raft and client ports). */
static inline void sim_cut(struct sim *s, unsigned i)
{
    s->cut[i] = true;
    for (unsigned j = 0; j < s->n; j++) {
        if (j != i) {
            raft_fixture_saturate(&s->f, i, j);
            raft_fixture_saturate(&s->f, j, i);
        }
    }
}

static inline void sim_heal(struct sim *s, unsigned i)
{
    s->cut[i] = false;
    for (unsigned j = 0; j < s->n; j++) {
        if (j != i) {
            raft_fixture_desaturate(&s->f, i, j);
            raft_fixture_desaturate(&s->f, j, i);
        }
    }
}

/* Node i stops: its raft, node and server run no more (its memory stays
 * until teardown), and its clients get no reply. */
static inline void sim_kill(struct sim *s, unsigned i)
{
    raft_fixture_kill(&s->f, i);
    s->nodes[i].up = false;
}

/* A new fixture server with its node and server (node id n+1, a member of
 * the cluster file that did not bootstrap), started; it joins when the
 * leader adds it. Returns its index. */
static inline unsigned sim_grow(struct sim *s)
{
    unsigned i = s->n;
    assert_true(i < s->file.n_nodes);
    assert_int_equal(raft_fixture_grow(&s->f, &sim_placeholder_fsm), 0);
    s->n++;
    sim_node_start(s, i);
    assert_int_equal(raft_start(raft_fixture_get(&s->f, i)), 0);
    return i;
}

#include "sim_client.h" /* clients, requests, state queries */

/* --- teardown --- */

static inline void sim_teardown(struct sim *s)
{
    for (unsigned i = 0; i < s->n; i++) {
        if (s->nodes[i].started) {
            ns_observe_stop(s->nodes[i].observe, NULL, NULL);
            ns_server_stop(s->nodes[i].server, NULL, NULL);
            ns_node_stop(s->nodes[i].node, NULL, NULL);
        }
    }
    while (s->n_closed > 0) {
        ns_conn_free_sink(s->closed[--s->n_closed]);
    }
    raft_fixture_close(&s->f); /* entries in flight call back */
    for (unsigned i = 0; i < s->n_clients; i++) {
        sim_client_free(&s->clients[i]);
    }
    while (s->msgs != NULL) {
        struct sim_msg *m = s->msgs;
        s->msgs = m->next;
        free(m->bytes);
        free(m);
    }
    uv_run(&s->loop, UV_RUN_DEFAULT); /* the servers' handles close */
    for (unsigned i = 0; i < s->n; i++) {
        if (s->nodes[i].started) {
            ns_observe_destroy(s->nodes[i].observe);
            ns_server_destroy(s->nodes[i].server);
            ns_node_destroy(s->nodes[i].node);
        }
    }
    assert_int_equal(uv_loop_close(&s->loop), 0);
    for (unsigned i = 0; i < s->file.n_nodes; i++) {
        ns_state_close(&s->nodes[i].state);
        for (unsigned j = 0; j < SIM_MAX; j++) {
            ns_buf_close(&s->links[j][i].in);
        }
    }
    ns_cluster_config_close(&s->file);
    ns_props_close(&s->settings);
    for (unsigned i = 0; i < s->n_sent; i++) {
        free(s->sent[i].frame);
    }
}

/* cmocka fixtures shared by the test_sim_*.c files: *state is a calloc'd
 * cluster of n bootstrapped nodes out of the cluster file's n_file, set up
 * with opts (NULL = the defaults); sim_fixture_teardown tears it down and
 * frees it. */
static inline struct sim *sim_fixture_new(unsigned n, unsigned n_file,
                                          const struct sim_opts *opts)
{
    struct sim *s = calloc(1, sizeof *s);
    assert_non_null(s);
    sim_setup_with(s, n, n_file, opts);
    return s;
}

static inline int sim_fixture_setup3(void **state)
{
    *state = sim_fixture_new(3, 3, NULL);
    return 0;
}

static inline int sim_fixture_setup5(void **state)
{
    *state = sim_fixture_new(5, 5, NULL);
    return 0;
}

static inline int sim_fixture_teardown(void **state)
{
    struct sim *s = *state;
    sim_teardown(s);
    free(s);
    return 0;
}

/* Waits for the reply to op on c (30 s of virtual time) and requires its
 * code. */
static inline void sim_expect_code(struct sim_client *c, int32_t op,
                                   int32_t code)
{
    struct ns_cmd reply;
    struct sim_reply *r = sim_wait_reply(c, op, 30000, &reply);
    assert_non_null(r);
    if (reply.code != code) {
        fail_msg("reply %d: code %d (%s), want %d", op, (int)reply.code,
                 reply.remark != NULL ? reply.remark : "", (int)code);
    }
    ns_cmd_close(&reply);
}

#endif
