/* The lifecycle of a client connection as one state, and which changes of it
 * are legal. Pure: conn.c and conn_tls.c move a connection through it with
 * ns_conn_set_state, which asserts every change against this table.
 *
 *   NEW --first byte--> OPEN (plaintext) | HANDSHAKING (a TLS ClientHello)
 *   HANDSHAKING --handshake done--> OPEN
 *   OPEN --flow control: too much in flight, held or unflushed--> PAUSED
 *   PAUSED --below the low marks--> RESUMING (reads restart at the next flush,
 *                                            outside raft's callbacks)
 *   RESUMING --flush--> OPEN
 *   any of the above --ns_conn_close--> CLOSING --close callback--> CLOSED
 *
 * Only OPEN cuts and dispatches frames; bytes that arrive in PAUSED or
 * RESUMING wait in the read buffer. CLOSED is the last state: the memory is
 * freed right after. A write in flight and membership of the flush list are
 * not states: any open state can have them. */
#ifndef RAFTNS_CONN_STATE_H
#define RAFTNS_CONN_STATE_H

#include <stdbool.h>

enum ns_conn_state {
    NS_CONN_NEW,         /* accepted, no byte read yet */
    NS_CONN_HANDSHAKING, /* TLS session created, handshake not done */
    NS_CONN_OPEN,        /* reading, cutting and dispatching frames */
    NS_CONN_PAUSED,      /* reads stopped by flow control */
    NS_CONN_RESUMING,    /* still paused; resumes at the next flush */
    NS_CONN_CLOSING,     /* uv_close called, waiting for its callback */
    NS_CONN_CLOSED,      /* close callback ran: about to be freed */
    NS_CONN_N_STATES
};

/* Whether a connection may go from one state to the other. */
bool ns_conn_state_is_legal(enum ns_conn_state from, enum ns_conn_state to);
/* The state's name for logs ("open"); static storage. */
const char *ns_conn_state_name(enum ns_conn_state s);

#endif
