/* Backup files (include/raftns/backup.h): their header, its checks, and the
 * member table a restored state takes from its new cluster. Pure; not the
 * transfer (raftnsctl, src/cluster/recovery.c) nor the data dir a restore
 * writes (raft/node/node_restore.c). */
#include <inttypes.h>
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/backup.h"
#include "raftns/err.h"

#define CRC32C_POLY 0x82F63B78u /* reflected Castagnoli polynomial */

uint32_t ns_backup_crc32c(uint32_t crc, const void *p, size_t len)
{
    /* Bit by bit: no table to keep, and a state of a few MB takes
     * milliseconds, next to the disk and network it travels through. */
    const uint8_t *b = p;
    crc = ~crc;
    for (size_t i = 0; i < len; i++) {
        crc ^= b[i];
        for (int k = 0; k < 8; k++) {
            crc = (crc >> 1) ^ (CRC32C_POLY & (0u - (crc & 1u)));
        }
    }
    return ~crc;
}

static void put_be(uint8_t *out, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--) {
        out[i] = (uint8_t)v;
        v >>= 8;
    }
}

void ns_backup_header_encode(uint64_t index, uint64_t term, const uint8_t *body,
                             size_t len, uint8_t out[NS_BACKUP_HEADER_LEN])
{
    put_be(out, NS_BACKUP_MAGIC, 4);
    put_be(out + 4, NS_BACKUP_VERSION, 2);
    put_be(out + 6, NS_BACKUP_HEADER_LEN, 2);
    put_be(out + 8, index, 8);
    put_be(out + 16, term, 8);
    put_be(out + 24, len, 8);
    put_be(out + 32, ns_backup_crc32c(0, body, len), 4);
    put_be(out + 36, ns_backup_crc32c(0, out, 36), 4);
}

int ns_backup_header_decode(const uint8_t *p, size_t len,
                            struct ns_backup_header *h, char *err,
                            size_t errlen)
{
    struct ns_rd in;
    ns_rd_init(&in, p, len);
    uint32_t magic = ns_rd_u32(&in);
    uint16_t version = ns_rd_u16(&in);
    uint16_t header_len = ns_rd_u16(&in);
    if (in.err != 0 || magic != NS_BACKUP_MAGIC) {
        ns_errf(err, errlen,
                len < 4 ? "not a raftns snapshot file (only %zu bytes)"
                        : "not a raftns snapshot file (no RNSB magic)",
                len);
        return NS_EPROTO;
    }
    if (version > NS_BACKUP_VERSION) {
        ns_errf(err, errlen,
                "snapshot file format version %u is newer than this raftns "
                "reads (%u)",
                (unsigned)version, (unsigned)NS_BACKUP_VERSION);
        return NS_EVERSION;
    }
    if (version == 0 || header_len != NS_BACKUP_HEADER_LEN) {
        ns_errf(err, errlen,
                "damaged header (format version %u, header length %u)",
                (unsigned)version, (unsigned)header_len);
        return NS_EPROTO;
    }
    if (len < NS_BACKUP_HEADER_LEN) {
        ns_errf(err, errlen,
                "truncated: %zu bytes, shorter than the %d-byte header", len,
                NS_BACKUP_HEADER_LEN);
        return NS_EPROTO;
    }
    h->version = version;
    h->index = ns_rd_u64(&in);
    h->term = ns_rd_u64(&in);
    h->body_len = ns_rd_u64(&in);
    h->body_crc = ns_rd_u32(&in);
    uint32_t header_crc = ns_rd_u32(&in);
    if (header_crc != ns_backup_crc32c(0, p, 36)) {
        ns_errf(err, errlen, "damaged header (header checksum mismatch)");
        return NS_EPROTO;
    }
    if (h->index == 0 || h->body_len > NS_BACKUP_BODY_MAX) {
        ns_errf(err, errlen,
                "damaged header (index %" PRIu64 ", body length %" PRIu64 ")",
                h->index, h->body_len);
        return NS_EPROTO;
    }
    return 0;
}

int ns_backup_file_check(const uint8_t *p, size_t len,
                         struct ns_backup_header *h, const uint8_t **body,
                         size_t *body_len, char *err, size_t errlen)
{
    int rv = ns_backup_header_decode(p, len, h, err, errlen);
    if (rv != 0) {
        return rv;
    }
    uint64_t have = len - NS_BACKUP_HEADER_LEN;
    if (have < h->body_len) {
        ns_errf(err, errlen,
                "truncated: the body has %" PRIu64 " of %" PRIu64 " bytes",
                have, h->body_len);
        return NS_EPROTO;
    }
    if (have > h->body_len) {
        ns_errf(err, errlen,
                "%" PRIu64 " unexpected bytes after the %" PRIu64 "-byte body",
                have - h->body_len, h->body_len);
        return NS_EPROTO;
    }
    const uint8_t *b = p + NS_BACKUP_HEADER_LEN;
    uint32_t crc = ns_backup_crc32c(0, b, (size_t)h->body_len);
    if (crc != h->body_crc) {
        ns_errf(err, errlen,
                "damaged body: CRC32C %08" PRIx32 ", header says %08" PRIx32,
                crc, h->body_crc);
        return NS_EPROTO;
    }
    struct ns_state s;
    rv = ns_state_init(&s);
    if (rv == 0) {
        rv = ns_snapshot_decode(&s, b, (size_t)h->body_len);
        ns_state_close(&s);
    }
    if (rv == NS_ENOMEM) {
        ns_errf(err, errlen, "out of memory");
        return rv;
    }
    if (rv != 0) {
        /* the checksum matched: written by a broken or newer raftns */
        ns_errf(err, errlen, "the body is not a state this raftns reads: %s",
                ns_strerror(rv));
        return rv == NS_EVERSION ? NS_EVERSION : NS_EPROTO;
    }
    *body = b;
    *body_len = (size_t)h->body_len;
    return 0;
}

int ns_backup_rebase_members(struct ns_state *s,
                             const struct ns_cluster_config *c)
{
    size_t n = 0;
    struct ns_member *m = ns_calloc(c->n_nodes ? c->n_nodes : 1, sizeof *m);
    if (m == NULL) {
        return NS_ENOMEM;
    }
    for (size_t i = 0; i < c->n_nodes; i++) {
        const struct ns_cluster_node *nd = &c->nodes[i];
        if (!nd->bootstrap) {
            continue; /* joins later through MEMBER_ADD, which records it */
        }
        size_t at = n;
        while (at > 0 && m[at - 1].id > nd->id) { /* keep sorted by id */
            m[at] = m[at - 1];
            at--;
        }
        memset(&m[at], 0, sizeof m[at]);
        n++;
        m[at].id = nd->id;
        m[at].raft_addr = ns_strdup(nd->raft_addr);
        m[at].client_addr = ns_strdup(nd->client_addr);
        m[at].http_addr = nd->http_addr ? ns_strdup(nd->http_addr) : NULL;
        if (m[at].raft_addr == NULL || m[at].client_addr == NULL ||
            (nd->http_addr != NULL && m[at].http_addr == NULL)) {
            for (size_t k = 0; k < n; k++) {
                ns_state_member_close(&m[k]);
            }
            ns_free(m);
            return NS_ENOMEM;
        }
    }
    for (size_t i = 0; i < s->n_members; i++) {
        ns_state_member_close(&s->members[i]);
    }
    ns_free(s->members);
    s->members = m;
    s->n_members = n;
    return 0;
}

const char *ns_backup_table_name(enum ns_backup_table t)
{
    static const char *const names[NS_BACKUP_N_TABLES] = {
        "route", "kv", "config", "members", "acl", "requestIds"};
    return (unsigned)t < NS_BACKUP_N_TABLES ? names[t] : "?";
}

int ns_backup_table_encode(const struct ns_state *s, enum ns_backup_table t,
                           struct ns_buf *out)
{
    switch (t) {
    case NS_BACKUP_TABLE_ROUTE:
        return ns_route_encode_state(s->route, out);
    case NS_BACKUP_TABLE_KV:
        return ns_kv_encode_state(s->kv, out);
    case NS_BACKUP_TABLE_CONFIG:
        return ns_config_encode_state(s->config, out);
    case NS_BACKUP_TABLE_MEMBERS:
        ns_buf_put_u32(out, (uint32_t)s->n_members);
        for (size_t i = 0; i < s->n_members; i++) {
            ns_buf_put_u64(out, s->members[i].id);
            ns_buf_put_str(out, s->members[i].raft_addr);
            ns_buf_put_str(out, s->members[i].client_addr);
            ns_buf_put_str(out, s->members[i].http_addr);
        }
        return out->err;
    case NS_BACKUP_TABLE_ACL:
        return ns_acl_encode_state(&s->acl, out);
    case NS_BACKUP_TABLE_REQIDS:
        ns_reqid_encode_state(&s->reqids, out);
        return out->err;
    default:
        return NS_EINVAL;
    }
}
