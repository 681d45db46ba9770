/* Private to the transport room (src/net/): what conn.c, conn_tls.c,
 * conn_limit.c and net.c call of each other. No other folder includes it. */
#ifndef RAFTNS_NET_INT_H
#define RAFTNS_NET_INT_H

#include "net/net.h"

/* --- conn.c --- */
/* Accepts one connection from the listener (its callback, net.c). */
void ns_conn_accept(struct ns_net *net);

/* --- conn_tls.c: the TLS side of connections --- */
/* Loads the contexts of cfg (NULL = disabled) into net->tls. 0, NS_EIO
 * (logged) or NS_ENOMEM. */
int ns_conn_tls_init(struct ns_net *net, const struct ns_server_tls *cfg);
void ns_conn_tls_close(struct ns_net *net);
/* Decides by the first byte of a connection: plain, TLS (c->tls is set) or
 * refused (closed, logged). 0 = go on, -1 = closed. */
int ns_conn_tls_classify(struct ns_conn *c, uint8_t first);
/* Decrypts ciphertext (borrowed) into ns_conn_input; closes c on a TLS
 * failure (logged). */
void ns_conn_tls_input(struct ns_conn *c, const uint8_t *p, size_t n);
/* Encrypts c->out (emptied) and returns every ciphertext byte to send (owned,
 * ns_free) with *len, or NULL when there is none or c was closed. */
uint8_t *ns_conn_tls_output(struct ns_conn *c, size_t *len);

/* --- conn_limit.c --- */
/* Defaults for the zero fields of cfg (borrowed, may be NULL). 0 or
 * NS_ENOMEM. */
int ns_conn_limits_init(struct ns_conn_limits *l,
                        const struct ns_client_limits *cfg);
void ns_conn_limits_close(struct ns_conn_limits *l);
/* Counts a connection from ip when n_conns (this one included) and the
 * address's count allow it: NULL, else the reason (nothing counted, the refusal
 * counted in /metrics). */
const char *ns_conn_limits_admit(struct ns_conn_limits *l, size_t n_conns,
                                 const char *ip);
/* Uncounts a connection that was admitted from ip. */
void ns_conn_limits_release(struct ns_conn_limits *l, const char *ip);
/* Logs a refusal, at most one line a second. */
void ns_conn_limits_log(struct ns_conn_limits *l, uint64_t now_ms,
                        const char *peer, const char *reason);
/* Closes the connections holding the most buffered bytes until the total is
 * within clientBufferBudgetBytes. */
void ns_conn_limits_enforce_budget(struct ns_net *net);

#endif
