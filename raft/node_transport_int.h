/* Private to raft/node_transport.c and raft/node_relay.c: the transport's
 * state and one connection's (handshake, then relay). Not an interface for
 * anything else: the node uses raft/node_transport.h. */
#ifndef RAFTNS_NODE_TRANSPORT_INT_H
#define RAFTNS_NODE_TRANSPORT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#include "raftns/node.h"
#include "raftns/wire.h"

#include "node_transport.h"

#define HANDSHAKE_MS 2000  /* TCP connect plus handshake */
#define MAX_HANDSHAKING 64 /* unauthenticated inbound connections, in all */
#define MAX_HANDSHAKING_PER_IP 8 /* ... and from one source IP */
#define CHUNK_SIZE 65536         /* relay read size */
#define HIGH_WATER (4u << 20)    /* stop reading a side above this memory */
#define LOW_WATER (1u << 20)     /* and resume below this */
#define LOG_INTERVAL_MS 1000     /* refusal/violation warnings, at most one */

enum { DIR_IN = 0, DIR_OUT = 1 }; /* net -> raft, raft -> net */
enum { PHASE_HANDSHAKE, PHASE_RELAY, PHASE_CLOSING };

struct limiter {
    uint64_t last_ms;
    uint64_t suppressed;
};

struct transport {
    struct raft_uv_transport *iface;
    uv_loop_t *loop;
    uint64_t id;
    char addr[NS_WIRE_ADDR_MAX + 1];
    uint8_t *key;
    size_t key_len;
    struct ns_wire_limits limits;
    node_transport_member_fn find_member;
    void *member_arg;
    struct sockaddr_in self_sa; /* our raft address; outbound source too */
    uv_tcp_t listener;
    bool listener_inited;
    bool listener_open; /* close callback not yet run */
    raft_uv_accept_cb accept_cb;
    struct conn *conns;
    unsigned n_handshaking;
    bool closing;
    raft_uv_transport_close_cb close_cb;
    struct limiter refusals;
    struct limiter violations;
    struct ns_node_peer_stats stats;
};

struct conn {
    struct transport *t;
    struct conn *prev, *next;
    bool inbound;
    bool handshaking_counted;
    bool pipe_inited;
    bool tcp_paused, pipe_paused;
    int phase;
    int n_handles;
    uv_tcp_t tcp;
    uv_timer_t timer;
    uv_pipe_t pipe; /* our end of the socketpair */
    uv_connect_t connect_req;
    uv_write_t hs_write[2];
    struct raft_uv_connect *req; /* outbound: until its callback */
    uint64_t peer_id;
    char peer_addr[NS_WIRE_ADDR_MAX + 1];
    char remote[64];    /* ip:port of the socket, for logs */
    uint32_t remote_ip; /* network order; 0 when unknown */
    struct ns_wire_auth auth;
    int hs_step; /* inbound: 0 wants HELLO, 1 wants RESPONSE */
    uint8_t nonce[NS_WIRE_NONCE_SIZE];
    uint8_t hs_buf[NS_WIRE_MSG_MAX];
    size_t hs_len;
    uint8_t out[2][NS_WIRE_MSG_MAX];
    struct ns_wire_check check;
    size_t queued[2];
};

/* Closes every handle of c; it is freed (and an outbound request called back
 * with a failure) once they are all closed (node_transport.c). */
void node_conn_close(struct conn *c);
/* Counts and logs (rate-limited) a failed handshake, then closes c. */
void node_conn_refuse(struct conn *c, const char *reason);
/* Counts and logs (rate-limited) a checker violation, then closes c. */
void node_conn_violation(struct conn *c, const char *reason);
/* The handshake succeeded: makes the socketpair, hands libraft its end (accept
 * or connect callback) and starts relaying (node_relay.c). */
void node_relay_start(struct conn *c);

#endif
