/* Snapshot encoding of the whole replicated state, and its digest. Not the raft
 * snapshot plumbing (node.c). Pure.
 *
 * WARNING: persisted and replicated format. Version 1 layout: u32 magic "RNSS",
 * u16 version, route state (ns_route_encode_state), KV state, config state, u32
 * n_members {u64 id, str? raft_addr, str? client_addr, str? http_addr} sorted
 * by id. Nothing may follow. Version 2: version 1's fields, then the account
 * table (ns_acl_encode_state: u8 seeded, u32 n {account}). Version 1 is still
 * written while the table is empty and unseeded, so a cluster that never used
 * ACL keeps byte-identical snapshots and digests. Version 3: version 2's
 * fields, then the request-id table (ns_reqid_encode_state), written once a
 * request id was recorded. Version 4: version 3's fields (the request-id
 * table may be empty), then the controller table (ns_ctl_encode_state),
 * written while that table has a group, so a name server that never served a
 * controller keeps the bytes and digests of versions 1-3. Never change any of
 * them; add a version. */
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/fsm.h"

#define SNAPSHOT_MAGIC 0x524E5353u /* "RNSS" */
#define SNAPSHOT_VERSION_1 1
#define SNAPSHOT_VERSION_ACL 2
#define SNAPSHOT_VERSION_REQIDS 3
#define SNAPSHOT_VERSION 4 /* the newest this code reads */

static bool with_ctl(const struct ns_state *s)
{
    return s->ctl.n > 0;
}

static bool with_reqids(const struct ns_state *s)
{
    return s->reqids.n > 0 || with_ctl(s);
}

static bool with_acl(const struct ns_state *s)
{
    return s->acl.n > 0 || s->acl.seeded || with_reqids(s);
}

static void encode_version(const struct ns_state *s, struct ns_buf *out)
{
    ns_buf_put_u32(out, SNAPSHOT_MAGIC);
    ns_buf_put_u16(out, with_ctl(s)      ? SNAPSHOT_VERSION
                        : with_reqids(s) ? SNAPSHOT_VERSION_REQIDS
                        : with_acl(s)    ? SNAPSHOT_VERSION_ACL
                                         : SNAPSHOT_VERSION_1);
}

/* Everything after the route state. */
static int encode_after_route(const struct ns_state *s, struct ns_buf *out)
{
    int rv = ns_kv_encode_state(s->kv, out);
    if (rv == 0) {
        rv = ns_config_encode_state(s->config, out);
    }
    if (rv != 0) {
        return rv;
    }
    ns_buf_put_u32(out, (uint32_t)s->n_members);
    for (size_t i = 0; i < s->n_members; i++) {
        ns_buf_put_u64(out, s->members[i].id);
        ns_buf_put_str(out, s->members[i].raft_addr);
        ns_buf_put_str(out, s->members[i].client_addr);
        ns_buf_put_str(out, s->members[i].http_addr);
    }
    if (with_acl(s)) {
        ns_acl_encode_state(&s->acl, out);
    }
    if (with_reqids(s)) {
        ns_reqid_encode_state(&s->reqids, out);
    }
    if (with_ctl(s)) {
        ns_ctl_encode_state(&s->ctl, out);
    }
    return out->err;
}

int ns_snapshot_encode(const struct ns_state *s, struct ns_buf *out)
{
    encode_version(s, out);
    int rv = ns_route_encode_state(s->route, out);
    return rv != 0 ? rv : encode_after_route(s, out);
}

int ns_snapshot_capture_begin(struct ns_state *s, struct ns_buf *head,
                              struct ns_buf *tail,
                              struct ns_route_capture **out)
{
    encode_version(s, head);
    int rv = ns_route_capture_begin(s->route, head, tail, out);
    if (rv == 0) {
        rv = encode_after_route(s, tail);
        if (rv != 0) {
            ns_route_capture_end(s->route, *out);
            *out = NULL;
        }
    }
    return rv;
}

static int decode_members(struct ns_state *s, struct ns_rd *in)
{
    uint32_t n = ns_rd_u32(in);
    if (in->err || n > ns_rd_left(in) / 20) {
        return NS_EPROTO;
    }
    s->members = ns_calloc(n ? n : 1, sizeof *s->members);
    if (s->members == NULL) {
        return NS_ENOMEM;
    }
    for (; s->n_members < n; s->n_members++) {
        struct ns_member *m = &s->members[s->n_members];
        m->id = ns_rd_u64(in);
        int rv = ns_rd_str(in, &m->raft_addr);
        if (rv == 0) {
            rv = ns_rd_str(in, &m->client_addr);
        }
        if (rv == 0) {
            rv = ns_rd_str(in, &m->http_addr);
        }
        if (rv == 0 && s->n_members > 0 &&
            s->members[s->n_members - 1].id >= m->id) {
            rv = NS_EPROTO;
        }
        if (rv != 0) {
            s->n_members++; /* partially filled: ns_state_close frees it */
            return rv;
        }
    }
    return 0;
}

int ns_snapshot_decode(struct ns_state *s, const uint8_t *p, size_t len)
{
    struct ns_rd in;
    ns_rd_init(&in, p, len);
    uint32_t magic = ns_rd_u32(&in);
    uint16_t version = ns_rd_u16(&in);
    if (in.err || magic != SNAPSHOT_MAGIC) {
        return NS_EPROTO;
    }
    if (version < SNAPSHOT_VERSION_1 || version > SNAPSHOT_VERSION) {
        return version > SNAPSHOT_VERSION ? NS_EVERSION : NS_EPROTO;
    }
    struct ns_state fresh;
    int rv = ns_state_init(&fresh);
    if (rv != 0) {
        return rv;
    }
    rv = ns_route_decode_state(fresh.route, &in);
    if (rv == 0) {
        rv = ns_kv_decode_state(fresh.kv, &in);
    }
    if (rv == 0) {
        rv = ns_config_decode_state(fresh.config, &in);
    }
    if (rv == 0) {
        rv = decode_members(&fresh, &in);
    }
    if (rv == 0 && version >= SNAPSHOT_VERSION_ACL) {
        rv = ns_acl_decode_state(&fresh.acl, &in);
    }
    if (rv == 0 && version >= SNAPSHOT_VERSION_REQIDS) {
        rv = ns_reqid_decode_state(&fresh.reqids, &in);
        if (rv == 0 && version == SNAPSHOT_VERSION_REQIDS &&
            fresh.reqids.n == 0) {
            rv = NS_EPROTO; /* version 3 is written only with ids */
        }
    }
    if (rv == 0 && version >= SNAPSHOT_VERSION) {
        rv = ns_ctl_decode_state(&fresh.ctl, &in);
        if (rv == 0 && fresh.ctl.n == 0) {
            rv = NS_EPROTO; /* version 4 is written only with groups */
        }
    }
    if (rv == 0 && (in.err != 0 || ns_rd_left(&in) != 0)) {
        rv = NS_EPROTO;
    }
    if (rv != 0) {
        ns_state_close(&fresh);
        return rv;
    }
    /* The server remembers route epochs (its register memo): the restored
     * route must not repeat one of the route it replaces. */
    ns_route_continue_epoch(fresh.route, s->route);
    fresh.last_checkpoint_digest = s->last_checkpoint_digest;
    fresh.last_verdict_index = s->last_verdict_index;
    fresh.last_verdict_digest = s->last_verdict_digest;
    ns_state_close(s);
    *s = fresh;
    return 0;
}

uint64_t ns_snapshot_digest_more(uint64_t h, const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++) { /* FNV-1a 64 */
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t ns_snapshot_digest_bytes(const uint8_t *p, size_t len)
{
    return ns_snapshot_digest_more(NS_SNAPSHOT_DIGEST_START, p, len);
}

int ns_snapshot_digest(const struct ns_state *s, uint64_t *out)
{
    struct ns_buf b;
    ns_buf_init(&b);
    int rv = ns_snapshot_encode(s, &b);
    if (rv == 0) {
        *out = ns_snapshot_digest_bytes(b.data, b.len);
    }
    ns_buf_close(&b);
    return rv;
}
