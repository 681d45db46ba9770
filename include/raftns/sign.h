/* Signatures of raftns's private request codes (raftns/codes.h): an
 * HMAC-SHA256 keyed by the cluster secret over the request (code, every ext
 * field but the signature, body), a timestamp and a nonce, so the secret never
 * travels and a captured request cannot be replayed. Every ext field but the
 * signature itself and the ACL Signature is signed. Pure: the clock and the
 * nonce are inputs; the replay memory is the caller's (src/remoting/replay.c).
 *
 * WARNING: the signed byte string is a wire format shared by every node and
 * raftnsctl version of a cluster. Never change it; add a new label. */
#ifndef RAFTNS_SIGN_H
#define RAFTNS_SIGN_H

#include <stddef.h>
#include <stdint.h>

#include "raftns/remoting.h"

#define NS_EXT_SIG "raftnsSig"     /* hex HMAC-SHA256, 64 chars */
#define NS_EXT_SIG_TS "raftnsTs"   /* signer's wall clock, ms, decimal */
#define NS_EXT_NONCE "raftnsNonce" /* 32 hex chars, fresh per request */
/* Not signed: the stock ACL signature (raftns/acl.h) is computed after this
 * one and covers it, so a request can carry both. */
#define NS_SIGN_EXT_ACL_SIGNATURE "Signature"
#define NS_SIGN_NONCE_LEN 16
/* A signature is accepted this far from the verifier's clock, either way. */
#define NS_SIGN_WINDOW_MS 60000

/* Adds NS_EXT_SIG_TS, NS_EXT_NONCE and NS_EXT_SIG to c (replacing earlier
 * ones). secret is borrowed (secret_len bytes, may contain NULs). Returns 0,
 * NS_ENOMEM or NS_EIO (the crypto library failed). */
int ns_sign_request(struct ns_cmd *c, const void *secret, size_t secret_len,
                    int64_t now_ms, const uint8_t nonce[NS_SIGN_NONCE_LEN]);

/* Checks c's signature and timestamp against now_ms. Returns 0 and the
 * request's nonce and timestamp (for the caller's replay check), or NS_EPERM
 * with *why (static text) saying what was wrong, NS_ENOMEM or NS_EIO. */
int ns_sign_verify(const struct ns_cmd *c, const void *secret,
                   size_t secret_len, int64_t now_ms,
                   uint8_t nonce[NS_SIGN_NONCE_LEN], int64_t *ts_ms,
                   const char **why);

#endif
