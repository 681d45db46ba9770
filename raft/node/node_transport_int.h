/* Private to raft/node/node_transport.c and raft/node/node_relay.c: the
 * transport's state and one connection's (handshake, then relay). Not an
 * interface for anything else: the node uses raft/node/node_transport.h. */
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
#include "raftns/tls.h"
#include "raftns/wire.h"

#include "node_transport.h"

#define HANDSHAKE_MS 2000  /* TCP connect plus handshake */
#define MAX_HANDSHAKING 64 /* unauthenticated inbound connections, in all */
#define MAX_HANDSHAKING_PER_IP 8 /* ... and from one source IP */
#define CHUNK_SIZE 65536         /* relay read size */
#define HIGH_WATER (4u << 20)    /* stop reading a side above this memory */
#define LOW_WATER (1u << 20)     /* and resume below this */
#define NODE_HEARD_MAX 64        /* peers remembered for the quorum report */
#define LOG_INTERVAL_MS 1000     /* refusal/violation warnings, at most one */

enum { DIR_IN = 0, DIR_OUT = 1 }; /* net -> raft, raft -> net */
enum { PHASE_HANDSHAKE, PHASE_RELAY, PHASE_CLOSING };

struct limiter {
    uint64_t last_ms;
    uint64_t suppressed;
};

/* One relay read, then the write that carries it. */
struct chunk {
    uv_write_t req;
    struct conn *c;
    int dir;
    size_t len;
    char data[CHUNK_SIZE];
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
    /* when each peer was last heard (uv_now), for the quorum report; the
     * oldest entry makes room for a peer not in it */
    struct {
        uint64_t id, ms;
    } heard[NODE_HEARD_MAX];
    /* raftTls: both NULL for plain TCP. One reference each; sessions hold
     * their own, so a reload only affects new connections. */
    struct ns_tls_ctx *tls_server, *tls_client;
    char *tls_files[3];          /* owned: certificate, key, CA, for reloads */
    uint8_t scratch[CHUNK_SIZE]; /* ciphertext of one TCP read (copied) */
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
    size_t queued[2];   /* bytes held by writes towards the pipe / the TCP */
    struct ns_tls *tls; /* owned; NULL without raftTls */
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
/* Checks len inbound plaintext bytes in k (taken) and forwards them to
 * libraft (node_relay.c). */
void node_relay_forward_in(struct conn *c, struct chunk *k, size_t len);
/* Bytes of an authenticated peer arrived now (node_transport_last_heard). */
void node_transport_heard(struct transport *t, uint64_t id);
/* Pauses or resumes reading the source of dir (node_relay.c; relay only). */
void node_relay_pause(struct conn *c, int dir, bool pause);
/* Appends n plaintext bytes, just put at hs_buf + hs_len, to the handshake
 * and advances it (node_transport.c). */
void node_conn_hs_input(struct conn *c, size_t n);

/* --- raftTls (node_tls.c): TLS 1.3 between the TCP socket and the rest --- */

/* Loads the peer contexts from files[] (certificate, key, CA; borrowed):
 * a server asking for and verifying client certificates, and a client that
 * presents one and verifies the listener; both TLS 1.3 only. 0 (*server and
 * *client owned) or NS_EIO / NS_ENOMEM with err set. */
int node_tls_load(char *const files[3], struct ns_tls_ctx **server,
                  struct ns_tls_ctx **client, char *err, size_t errlen);
/* Starts c's session once TCP is up and reads the socket through it from now
 * on; an outbound one verifies the certificate names the IP it dialed. 0, or
 * c was refused (closing). */
int node_tls_start(struct conn *c);
/* (Re)starts reading c's socket through its session (after a pause). */
void node_tls_read_start(struct conn *c);
/* Encrypts len plaintext bytes (borrowed) and writes them to the socket,
 * counted in queued[DIR_OUT]. 0, or c was closed. */
int node_tls_send(struct conn *c, const uint8_t *p, size_t len);
/* Bytes the session holds on the way out (not yet handed to a write). */
size_t node_tls_buffered(const struct conn *c);

#endif
