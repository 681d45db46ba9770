/* The raft peer channel's pure parts: the authenticated handshake
 * (raft/wire_auth.c) and the checker of libraft 0.15's message stream
 * (raft/wire_check.c). No I/O, no clock, no randomness (nonces are inputs),
 * no allocation, no logging: raft/node/node_transport.c moves the bytes.
 *
 * WARNING: the handshake is a versioned wire format spoken between nodes of
 * possibly different builds. Never change the meaning of a field of version
 * NS_WIRE_VERSION; add a version instead, and keep the golden-byte tests.
 *
 * Handshake (all integers big-endian; addr is not NUL-terminated on the wire):
 *   HELLO     connector -> listener, 56 + addr_len bytes:
 *             "RNSH" u16 version, u16 addr_len, u64 from_id, u64 to_id,
 *             nonce[32], addr[addr_len] (the connector's raft address)
 *   CHALLENGE listener -> connector, 80 + addr_len bytes:
 *             "RNSC" u16 version, u16 addr_len, u64 server_id, nonce[32],
 *             mac_server[32], addr[addr_len] (the listener's raft address)
 *   RESPONSE  connector -> listener, 40 bytes:
 *             "RNSR" u16 version, u16 zero, mac_client[32]
 * mac_X = HMAC-SHA256(secret, transcript(label X)) where the transcript is
 *   label ("raftns-server" | "raftns-client"), NUL, u16 version,
 *   u64 connector id, u64 listener id, u16 len, connector addr, u16 len,
 *   listener addr, connector nonce, listener nonce.
 * Both sides contribute a fresh nonce, so no recorded transcript verifies
 * again; the secret never travels. After RESPONSE the connector's raft bytes
 * follow on the same stream. */
#ifndef RAFTNS_WIRE_H
#define RAFTNS_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NS_WIRE_VERSION 1
#define NS_WIRE_NONCE_SIZE 32
#define NS_WIRE_MAC_SIZE 32
#define NS_WIRE_ADDR_MAX 64 /* printable ASCII bytes, no NUL */
#define NS_WIRE_HELLO_FIXED 56
#define NS_WIRE_CHALLENGE_FIXED 80
#define NS_WIRE_RESPONSE_SIZE 40
/* Largest handshake message: a buffer of this size holds any of them. */
#define NS_WIRE_MSG_MAX (NS_WIRE_CHALLENGE_FIXED + NS_WIRE_ADDR_MAX)

enum ns_wire_auth_state {
    NS_WIRE_AUTH_NEW = 0,
    NS_WIRE_AUTH_SENT_HELLO,     /* connector waits for CHALLENGE */
    NS_WIRE_AUTH_SENT_CHALLENGE, /* listener waits for RESPONSE */
    NS_WIRE_AUTH_DONE,           /* authenticated */
    NS_WIRE_AUTH_FAILED,
};

/* One side of one handshake. Caller-allocated; no close needed. */
struct ns_wire_auth {
    const uint8_t *key; /* borrowed for the life of the handshake */
    size_t key_len;
    int state; /* enum ns_wire_auth_state */
    bool is_connector;
    uint64_t connector_id;
    uint64_t listener_id;
    char connector_addr[NS_WIRE_ADDR_MAX + 1];
    char listener_addr[NS_WIRE_ADDR_MAX + 1];
    uint8_t connector_nonce[NS_WIRE_NONCE_SIZE];
    uint8_t listener_nonce[NS_WIRE_NONCE_SIZE];
    const char *reason; /* static text of the last failure, or NULL */
};

/* Connector: starts a handshake from self (id, raft address) to the peer it
 * dialed (peer_id, peer_addr), with a fresh random nonce (borrowed, copied).
 * key (borrowed until the handshake ends) is the cluster secret. Writes HELLO
 * into out (cap bytes, NS_WIRE_MSG_MAX is enough), *out_len its size.
 * Returns 0, NS_EINVAL (an address over NS_WIRE_ADDR_MAX or not printable, an
 * id of 0) or NS_ETOOBIG (cap too small). */
int ns_wire_auth_connect(struct ns_wire_auth *a, const uint8_t *key,
                         size_t key_len, uint64_t self_id,
                         const char *self_addr, uint64_t peer_id,
                         const char *peer_addr, const uint8_t *nonce,
                         uint8_t *out, size_t cap, size_t *out_len);

/* Connector: consumes CHALLENGE from buf (len bytes received so far, borrowed).
 * 0: verified, *used bytes consumed, RESPONSE written to out (*out_len), and
 * the state is DONE: send RESPONSE, then raft bytes. NS_EAGAIN: incomplete,
 * read more (nothing consumed). NS_EPROTO (malformed), NS_EVERSION or NS_EPERM
 * (wrong id/address, MAC mismatch): the state is FAILED, a->reason says why. */
int ns_wire_auth_on_challenge(struct ns_wire_auth *a, const uint8_t *buf,
                              size_t len, size_t *used, uint8_t *out,
                              size_t cap, size_t *out_len);

/* Listener: consumes HELLO from buf as above, for self (id, raft address) with
 * a fresh nonce (borrowed, copied), and writes CHALLENGE into out. After 0,
 * a->connector_id and a->connector_addr name the claimed (not yet proven)
 * peer. Errors as above; NS_EPERM also when HELLO targets another id. */
int ns_wire_auth_accept(struct ns_wire_auth *a, const uint8_t *key,
                        size_t key_len, uint64_t self_id, const char *self_addr,
                        const uint8_t *nonce, const uint8_t *buf, size_t len,
                        size_t *used, uint8_t *out, size_t cap,
                        size_t *out_len);

/* Listener: consumes RESPONSE. 0: the peer proved the secret (state DONE,
 * *used consumed; bytes after it are raft traffic). NS_EAGAIN, NS_EPROTO,
 * NS_EVERSION, NS_EPERM as above. */
int ns_wire_auth_on_response(struct ns_wire_auth *a, const uint8_t *buf,
                             size_t len, size_t *used);

/* --- checker of the inbound raft message stream (libraft 0.15 uv format) ---
 *
 * A message is: u64 LE type, u64 LE header length, header, payload. Header
 * sizes (0.15 "v2" forms; the shorter legacy forms are refused):
 *   AppendEntries        48 + 16 n  (term, prev index, prev term, commit,
 *                        u64 n, n x {u64 term, u8 type, 3 pad, u32 len},
 *                        8 unused bytes); payload = sum of the n lengths
 *   AppendEntriesResult  24         RequestVote 40 (term, candidate id, last
 *   RequestVoteResult    24         index, last term, flags)
 *   TimeoutNow           24
 *   InstallSnapshot      56 + c     (term, last index, last term, conf index,
 *                        u64 c, configuration[c], u64 data length, 8 unused);
 *                        payload = data length */

struct ns_wire_limits {
    uint64_t max_payload;      /* per message; default 1 GiB */
    uint32_t max_entries;      /* per AppendEntries; default 1 Mi */
    uint32_t max_entry_len;    /* per entry; default command max + 16 */
    uint32_t max_conf_len;     /* configuration blob; default 64 KiB */
    uint32_t max_conf_servers; /* default 64 */
};

enum ns_wire_check_state {
    NS_WIRE_CHECK_PREAMBLE = 0,
    NS_WIRE_CHECK_HEADER,
    NS_WIRE_CHECK_PAYLOAD,
    NS_WIRE_CHECK_FAILED,
};

/* Incremental checker of one connection's inbound stream. Caller-allocated,
 * fixed size, never allocates and never buffers payloads. */
struct ns_wire_check {
    struct ns_wire_limits limits;
    uint64_t peer_id; /* the authenticated peer */
    int state;        /* enum ns_wire_check_state */
    uint64_t type;
    uint64_t header_len;
    uint64_t header_off; /* header bytes seen */
    uint64_t payload_left;
    uint64_t payload_sum; /* AppendEntries: lengths announced so far */
    uint64_t n_entries;
    uint64_t conf_len;
    uint64_t conf_off; /* configuration bytes seen */
    uint64_t conf_servers;
    uint64_t conf_done; /* servers fully read */
    uint32_t addr_len;  /* current configuration address */
    int conf_field;     /* position inside the configuration */
    uint8_t word[16];   /* the current fixed field being assembled */
    unsigned word_len;
    uint64_t n_messages; /* complete messages seen */
    const char *reason;  /* static text of the violation, or NULL */
};

/* Fills l with the defaults above. */
void ns_wire_limits_default(struct ns_wire_limits *l);
/* Starts checking a stream from peer_id (the id the handshake proved) with the
 * given limits (copied). */
void ns_wire_check_init(struct ns_wire_check *c, const struct ns_wire_limits *l,
                        uint64_t peer_id);
/* Feeds the next len bytes of the stream (borrowed). 0: all of them may be
 * forwarded to libraft. NS_EPROTO or NS_ETOOBIG: a violation; the first *n_ok
 * bytes may still be forwarded (they end before the message is complete, so
 * libraft never decodes the offending one), c->reason names the rule, and every
 * later call fails the same way. *n_ok is len after 0. */
int ns_wire_check_feed(struct ns_wire_check *c, const uint8_t *buf, size_t len,
                       size_t *n_ok);

#endif
