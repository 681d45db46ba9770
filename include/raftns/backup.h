/* Backup files of the replicated state (raftnsctl snapshot save, raftns
 * restore): a fixed header with the index, term and a CRC32C of the body, then
 * the body, which is ns_snapshot_encode's bytes unchanged. Pure: encoding and
 * checking bytes only; reading and writing the file is the callers'.
 *
 * WARNING: persisted format. Version 1 header, 40 bytes, big-endian:
 *   u32 magic "RNSB", u16 version (1), u16 header length (40),
 *   u64 index (the applied index the state is exactly), u64 term (the node's
 *   term when the copy was taken), u64 body length, u32 CRC32C of the body,
 *   u32 CRC32C of the 36 header bytes before it.
 * Nothing follows the body. Never change it; add a version. */
#ifndef RAFTNS_BACKUP_H
#define RAFTNS_BACKUP_H

#include <stddef.h>
#include <stdint.h>

#include "raftns/buf.h"
#include "raftns/cluster_config.h"
#include "raftns/fsm.h"

#define NS_BACKUP_MAGIC 0x524E5342u /* "RNSB" */
#define NS_BACKUP_VERSION 1
#define NS_BACKUP_HEADER_LEN 40
/* The largest body a version 1 reader accepts (the state fetch's own cap). */
#define NS_BACKUP_BODY_MAX (1024ull * 1024u * 1024u)

struct ns_backup_header {
    uint16_t version;
    uint64_t index;
    uint64_t term;
    uint64_t body_len;
    uint32_t body_crc;
};

/* CRC32C (Castagnoli, reflected, as iSCSI and ext4 use it) of len bytes,
 * continuing crc (0 to start). ns_backup_crc32c(0, "123456789", 9) is
 * 0xE3069283. */
uint32_t ns_backup_crc32c(uint32_t crc, const void *p, size_t len);

/* Writes the header of a file whose body is body[0, len) taken at index/term
 * into out (NS_BACKUP_HEADER_LEN bytes, caller's). */
void ns_backup_header_encode(uint64_t index, uint64_t term, const uint8_t *body,
                             size_t len, uint8_t out[NS_BACKUP_HEADER_LEN]);

/* Decodes and checks the header at p[0, len) (len may be the whole file).
 * Returns 0, NS_EPROTO (not a backup file, header damaged or truncated) or
 * NS_EVERSION (a newer format); on error err (errlen bytes, NUL-terminated)
 * says what is wrong in words an operator can act on. */
int ns_backup_header_decode(const uint8_t *p, size_t len,
                            struct ns_backup_header *h, char *err,
                            size_t errlen);

/* Checks a whole file p[0, len): the header, that the body is exactly as long
 * as the header says, its checksum, and that it decodes as a snapshot. On
 * success *body / *body_len borrow from p. Same codes and err as above. */
int ns_backup_file_check(const uint8_t *p, size_t len,
                         struct ns_backup_header *h, const uint8_t **body,
                         size_t *body_len, char *err, size_t errlen);

/* Gives a restored state the identity of the new cluster: its member table
 * becomes the bootstrap members of c (ids and addresses), every other table
 * is kept as it is. 0 or NS_ENOMEM (s unchanged). */
int ns_backup_rebase_members(struct ns_state *s,
                             const struct ns_cluster_config *c);

/* The tables of a state, each as the bytes the snapshot encodes it with, for
 * comparing two states table by table (raftnsctl snapshot inspect). */
enum ns_backup_table {
    NS_BACKUP_TABLE_ROUTE,
    NS_BACKUP_TABLE_KV,
    NS_BACKUP_TABLE_CONFIG,
    NS_BACKUP_TABLE_MEMBERS,
    NS_BACKUP_TABLE_ACL,
    NS_BACKUP_TABLE_REQIDS,
    NS_BACKUP_N_TABLES
};
/* "route", "kv", "config", "members", "acl", "requestIds". Static storage. */
const char *ns_backup_table_name(enum ns_backup_table t);
/* Appends table t of s to out. 0 or a code of the table's encoder. */
int ns_backup_table_encode(const struct ns_state *s, enum ns_backup_table t,
                           struct ns_buf *out);

#endif
