/* RocketMQ ACL on the client port: the stock request signature (AccessKey,
 * Signature, base64 HMAC-SHA1 over the sorted ext values and the body, as
 * AclClientRPCHook and ali-ons sign), IPv4 networks, and the replicated
 * account table. Pure: no policy (which code needs which role is the server's
 * dispatch table), no clock, no I/O, no logging. */
#ifndef RAFTNS_ACL_H
#define RAFTNS_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raftns/buf.h"
#include "raftns/remoting.h"

#define NS_ACL_EXT_ACCESS_KEY "AccessKey"
#define NS_ACL_EXT_SIGNATURE "Signature"
#define NS_ACL_EXT_SECURITY_TOKEN "SecurityToken"
/* Left out of the signed content by clients up to 4.9.3 (MixAll
 * UNIQUE_MSG_QUERY_FLAG). */
#define NS_ACL_EXT_UNIQUE_KEY_QUERY "_UNIQUE_KEY_QUERY"
#define NS_ACL_SIG_LEN 28  /* base64 of a 20-byte HMAC-SHA1, without NUL */
#define NS_ACL_MAX_KEY 256 /* access and secret key bytes */
#define NS_ACL_MAX_NETS 64 /* networks per account or setting */
#define NS_ACL_MAX_ACCOUNTS 4096

/* Ordered: a role satisfies every requirement at or below it. */
enum ns_acl_role {
    NS_ACL_ROLE_NONE = 0, /* anonymous */
    NS_ACL_ROLE_READER = 1,
    NS_ACL_ROLE_BROKER = 2,
    NS_ACL_ROLE_ADMIN = 3,
};

/* An IPv4 network, host byte order; prefix 0..32. */
struct ns_acl_net {
    uint32_t addr;
    uint8_t prefix;
};

struct ns_acl_account {
    char *access_key; /* owned */
    char *secret_key; /* owned; never printed, logged or listed */
    enum ns_acl_role role;
    struct ns_acl_net *nets; /* owned; n_nets == 0: from anywhere */
    size_t n_nets;
};

/* The replicated account table, sorted by access key (byte order). */
struct ns_acl {
    struct ns_acl_account *items; /* owned */
    size_t n;
    bool seeded; /* the cluster file's accounts were applied, or raftnsctl
                    changed the table: a later seed is ignored */
};

/* Why a request's credentials were not accepted. */
enum ns_acl_verdict {
    NS_ACL_OK = 0,
    NS_ACL_NO_ACCESS_KEY,
    NS_ACL_NO_SIGNATURE,
    NS_ACL_UNKNOWN_KEY,
    NS_ACL_BAD_SIGNATURE,
    NS_ACL_BAD_SOURCE,
    NS_ACL_ROLE_TOO_LOW, /* set by the caller's policy, never by verify */
    NS_ACL_N_VERDICTS
};

/* --- names --- */

/* "admin", "broker", "reader" (NULL for NONE). */
const char *ns_acl_role_name(enum ns_acl_role role);
/* 0 and *out for "admin" | "broker" | "reader", else NS_EINVAL. */
int ns_acl_role_parse(const char *text, enum ns_acl_role *out);
/* The remark of a refusal ("no AccessKey", "signature mismatch", ...); for
 * ROLE_TOO_LOW the caller names the role. Static strings. */
const char *ns_acl_verdict_text(enum ns_acl_verdict v);
/* Short label for metrics ("no_access_key", ...). */
const char *ns_acl_verdict_label(enum ns_acl_verdict v);

/* --- networks --- */

/* Parses "a.b.c.d/p" or "a.b.c.d" (= /32). 0 or NS_EINVAL. Host bits set
 * below the prefix are cleared. */
int ns_acl_net_parse(const char *text, struct ns_acl_net *out);
/* Parses a list separated by ',' (spaces allowed; "" = empty list). *out owned
 * (ns_free), NULL when empty. 0, NS_EINVAL (*bad, when not NULL, points at
 * the offending item in text) or NS_ENOMEM. At most NS_ACL_MAX_NETS. */
int ns_acl_nets_parse(const char *text, struct ns_acl_net **out, size_t *n,
                      const char **bad);
bool ns_acl_net_contains(const struct ns_acl_net *net, uint32_t ip);
/* True when n == 0 or any net contains ip. */
bool ns_acl_nets_allow(const struct ns_acl_net *nets, size_t n, uint32_t ip,
                       bool empty_allows);
/* Writes "a.b.c.d/p" into out (>= 19 bytes). */
void ns_acl_net_format(const struct ns_acl_net *net, char *out, size_t len);

/* --- signature --- */

/* Computes the stock signature of cmd (borrowed) with secret (NUL-terminated):
 * base64(HMAC-SHA1(secret, values of every ext field except Signature, sorted
 * by key in UTF-16 code unit order, concatenated, then the body)). With
 * skip_unique_key the _UNIQUE_KEY_QUERY field is left out too. out gets
 * NS_ACL_SIG_LEN characters and a NUL. 0, NS_ENOMEM or NS_EIO (the crypto
 * library failed). */
int ns_acl_sign(const struct ns_cmd *cmd, const char *secret,
                bool skip_unique_key, char out[NS_ACL_SIG_LEN + 1]);
/* Checks cmd's AccessKey and Signature against acl from source address ip
 * (host order). *verdict is NS_ACL_OK and *who (may be NULL) the account
 * (borrowed from acl) when the signature is right and the account may sign
 * from ip. Clients up to 4.9.3 (version <= 399) leave _UNIQUE_KEY_QUERY out;
 * newer ones include it: both forms are accepted. Comparison is constant-time.
 * Returns 0, NS_ENOMEM or NS_EIO. */
int ns_acl_verify(const struct ns_acl *acl, const struct ns_cmd *cmd,
                  uint32_t ip, const struct ns_acl_account **who,
                  enum ns_acl_verdict *verdict);

/* --- the account table --- */

void ns_acl_init(struct ns_acl *acl);
void ns_acl_close(struct ns_acl *acl);
void ns_acl_account_close(struct ns_acl_account *a);
/* Deep copy of src into *dst. 0 or NS_ENOMEM (dst needs no close). */
int ns_acl_account_copy(struct ns_acl_account *dst,
                        const struct ns_acl_account *src);
/* Checks an account before it is proposed: key lengths, characters (no
 * control bytes), role, networks. 0 or NS_EINVAL with *why (static text). */
int ns_acl_account_validate(const struct ns_acl_account *a, const char **why);
/* Borrowed account or NULL. */
const struct ns_acl_account *ns_acl_find(const struct ns_acl *acl,
                                         const char *access_key);
/* Adds or replaces the account of a->access_key (deep copy). 0 or NS_ENOMEM
 * (acl unchanged). */
int ns_acl_put(struct ns_acl *acl, const struct ns_acl_account *a);
/* Removes the account; 0 whether or not it existed. */
int ns_acl_remove(struct ns_acl *acl, const char *access_key);

/* WARNING: part of the versioned snapshot format (snapshot version 2): u8
 * seeded, u32 n {account} sorted by access key, where account = str
 * access_key, str secret_key, u8 role, u32 n_nets {u32 addr, u8 prefix}. */
void ns_acl_encode_account(const struct ns_acl_account *a, struct ns_buf *out);
/* Decodes one account into *a (zeroed first). 0, NS_EPROTO or NS_ENOMEM; on
 * error *a is closed. */
int ns_acl_decode_account(struct ns_rd *in, struct ns_acl_account *a);
int ns_acl_encode_state(const struct ns_acl *acl, struct ns_buf *out);
/* Decodes into an empty table. 0, NS_EPROTO or NS_ENOMEM. */
int ns_acl_decode_state(struct ns_acl *acl, struct ns_rd *in);

#endif
