/* The cluster secret: the policy a secret must meet, reading it from a file,
 * and the random per-node secret of a node that was given none. It is the key
 * of the raft peer handshake and of the private request signatures; it never
 * travels on the wire. */
#ifndef RAFTNS_SECRET_H
#define RAFTNS_SECRET_H

#include <stddef.h>

#define NS_SECRET_MIN_LEN 16
#define NS_SECRET_FILE_MAX 4096
/* The file in a data dir holding a node's own generated secret. */
#define NS_SECRET_DATA_FILE "cluster-secret"

/* Pure policy: 0 when secret may be used, NS_EINVAL otherwise with why
 * (NUL-terminated in whylen bytes): empty, shorter than NS_SECRET_MIN_LEN, or
 * a placeholder shipped in cluster-configs/. */
int ns_secret_check(const char *secret, char *why, size_t whylen);

/* Reads a secret from path (trailing newlines dropped, at most
 * NS_SECRET_FILE_MAX bytes, no NUL bytes). Returns 0 (*out owned: ns_free;
 * err is "" or a warning: a file that others than its owner may read is used),
 * NS_EIO, NS_EPROTO (err says why) or NS_ENOMEM. */
int ns_secret_read_file(const char *path, char **out, char *err, size_t errlen);

/* The node's own secret in dir/NS_SECRET_DATA_FILE: read when it exists,
 * otherwise 32 random bytes (hex) written there with mode 0600 first. The dir
 * is created when missing. 0 (*out owned: ns_free; *created tells which),
 * NS_EIO (err says why) or NS_ENOMEM. */
int ns_secret_load_or_create(const char *dir, char **out, int *created,
                             char *err, size_t errlen);

#endif
