/* Shared between raftnsctl.c and tools/ctl_*.c: the command-line context, one
 * request/reply exchange, and the command entry points. Not a library: only
 * raftnsctl is built from these files. */
#ifndef RAFTNS_CTL_H
#define RAFTNS_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raftns/buf.h"
#include "raftns/remoting.h"

#define MAX_ADDRS 64

struct ns_tls_ctx;

enum {
    EXIT_SERVER = 1,      /* the server answered with an error */
    EXIT_USAGE = 2,       /* bad command line */
    EXIT_UNREACHABLE = 3, /* no address gave an answer */
};

struct ctl {
    char *addrs[MAX_ADDRS]; /* owned */
    size_t n_addrs;
    bool json;
    int timeout_ms;
    bool timeout_given; /* --timeout-ms: commands keep their own otherwise */
    const char *secret; /* borrowed: --secret or env RAFTNS_SECRET, or NULL */
    /* borrowed: --access-key / --secret-key or env RAFTNS_ACCESS_KEY /
     * RAFTNS_SECRET_KEY; when both are set every request is signed as the
     * stock RocketMQ ACL client signs (AccessKey, Signature) */
    const char *access_key;
    const char *secret_key;
    bool tls;          /* --tls (implied by the other --tls-* options) */
    bool tls_insecure; /* --tls-insecure: no server verification */
    const char *tls_ca, *tls_cert, *tls_key; /* borrowed from argv */
    struct ns_tls_ctx *tls_ctx;              /* owned, NULL = plain */
    char **args; /* borrowed from argv: the command and its operands */
    size_t n_args;
};

/* One answered exchange: the reply borrows its body from rx. */
struct reply {
    struct ns_buf rx;
    struct ns_cmd cmd;
};

/* Sends a request with ext (NULL-terminated key, value pairs) to each address
 * of ctl in turn until one answers. 0 (*out holds a code-0 reply: close it
 * with ns_ctl_reply_close), 1 (server error, printed) or 3 (unreachable). */
int ns_ctl_call(const struct ctl *ctl, int32_t code, const char *const *ext,
                const uint8_t *body, size_t body_len, struct reply *out);
void ns_ctl_reply_close(struct reply *r);
int ns_ctl_usage_error(const char *what, const char *arg);

/* ctl_cluster.c */
int ns_ctl_cmd_status(struct ctl *ctl);
int ns_ctl_cmd_member(struct ctl *ctl);
int ns_ctl_cmd_leader(struct ctl *ctl);

/* ctl_mqadmin.c */
int ns_ctl_cmd_write_perm(
    struct ctl *ctl); /* wipe-write-perm, add-write-perm */
int ns_ctl_cmd_delete_topic(struct ctl *ctl);
int ns_ctl_cmd_brokers(struct ctl *ctl);

/* ctl_snapshot.c */
int ns_ctl_cmd_snapshot(struct ctl *ctl);

/* ctl_acl.c */
int ns_ctl_cmd_acl(struct ctl *ctl);

/* ctl_controller.c */
int ns_ctl_cmd_controller(struct ctl *ctl);

#endif
