/* Recovery of a diverged node (docs/divergence.md): it copies the leader's
 * whole state in chunks over NS_CODE_STATE_FETCH and installs it with the
 * leader's applied index (ns_node_install_state), so the entries that state
 * already holds are skipped and every later one is applied once. The leader
 * side answers the chunks from one cached encoding. Deciding who diverged is
 * verdict.c; libraft 0.15 cannot be asked to send an InstallSnapshot. The same
 * code, sent by an operator instead of a node (raftnsctl snapshot save), copies
 * any ready node's state into a backup file (include/raftns/backup.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cluster/cluster.h"
#include "cluster/integrity.h"
#include "raftns/alloc.h"
#include "raftns/codes.h"
#include "raftns/err.h"
#include "raftns/log.h"

/* As large as a frame allows with room for the header: a state that fits is
 * copied in one reply, taken at the leader's applied index when it answers,
 * which this node cannot have passed yet (docs/divergence.md §5). */
#define FETCH_CHUNK NS_COMMAND_MAX
#define FETCH_MAX_TOTAL (1024ull * 1024u * 1024u)
#define FETCH_TIMEOUT_MS 10000
#define FIRST_DELAY_MS 1000 /* after a verdict, before the first fetch */
#define RETRY_SOON_MS 200   /* this node had applied past the copy */
#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 10000
#define CACHE_IDLE_MS 30000
/* A backup that starts while another copy is being transferred shares its
 * encoding (a consistent state, a little older than the applied index)
 * instead of replacing it under the other transfer. */
#define BACKUP_SHARE_MS 2000

void ns_recovery_close(struct ns_recovery *r)
{
    ns_buf_close(&r->got);
    ns_free(r->cache);
    r->cache = NULL;
    r->cache_len = 0;
}

static int set_ext_u64(struct ns_cmd *c, const char *key, uint64_t v)
{
    char text[24];
    snprintf(text, sizeof text, "%" PRIu64, v);
    return ns_cmd_ext_set(c, key, text);
}

static bool ext_u64(const struct ns_cmd *c, const char *key, uint64_t *out)
{
    int64_t v = 0;
    if (!ns_cmd_ext_int64(c, key, &v) || v < 0) {
        return false;
    }
    *out = (uint64_t)v;
    return true;
}

/* --- the diverged node --- */

static void reset_fetch(struct ns_recovery *r)
{
    r->fetching = false;
    r->at = 0;
    r->total = 0;
    r->n_chunks = 0;
    ns_buf_close(&r->got); /* a copy can be large: keep no capacity */
}

static void fetch_failed(struct ns_integrity *ig, const char *why)
{
    struct ns_recovery *r = &ig->recovery;
    reset_fetch(r);
    r->n_failed++;
    r->backoff_ms = r->backoff_ms == 0 ? BACKOFF_MIN_MS : r->backoff_ms * 2;
    if (r->backoff_ms > BACKOFF_MAX_MS) {
        r->backoff_ms = BACKOFF_MAX_MS;
    }
    r->next_ms = ns_integrity_now(ig) + r->backoff_ms;
    NS_LOG(NS_LOG_WARN,
           "recover: fetching the leader's state failed: %s; retrying in "
           "%" PRIu64 " ms",
           why, r->backoff_ms);
}

static void fetch_reply(void *arg, int status, const struct ns_cmd *reply);

static void fetch_next(struct ns_integrity *ig)
{
    struct ns_recovery *r = &ig->recovery;
    struct ns_cmd cmd;
    ns_cmd_init(&cmd);
    cmd.code = NS_CODE_STATE_FETCH;
    cmd.has_ext = true;
    int rv = set_ext_u64(&cmd, NS_EXT_INDEX, r->at);
    if (rv == 0) {
        rv = set_ext_u64(&cmd, NS_EXT_OFFSET, r->got.len);
    }
    if (rv == 0) {
        rv = ns_cluster_leader_request(ig->cluster, &cmd, FETCH_TIMEOUT_MS,
                                       fetch_reply, ig);
    }
    ns_cmd_close(&cmd);
    if (rv != 0) {
        fetch_failed(ig, ns_strerror(rv));
    }
}

static void install(struct ns_integrity *ig)
{
    struct ns_recovery *r = &ig->recovery;
    if (ns_node_diverge(ig->node)->health != NS_DIVERGE_DIVERGED ||
        ns_node_role(ig->node) == NS_ROLE_LEADER) {
        /* A later verdict agreed meanwhile, or this node was elected: the
         * copy is not needed, or skipping would fail its own proposals. */
        NS_LOG(NS_LOG_INFO, "recover: copy no longer needed; dropped");
        reset_fetch(r);
        return;
    }
    NS_LOG(NS_LOG_INFO,
           "recover: copy of %zu bytes at index %" PRIu64
           " received in %u chunks",
           r->got.len, r->at, r->n_chunks);
    int rv = ns_node_install_state(ig->node, r->got.data, r->got.len, r->at);
    uint64_t at = r->at;
    reset_fetch(r);
    if (rv == NS_EAGAIN) {
        /* This node applied entries past the copy meanwhile: the copy lacks
         * them, and they cannot be applied again. A newer copy will do. */
        NS_LOG(NS_LOG_INFO,
               "recover: applied past the leader's copy at %" PRIu64
               "; fetching a newer one",
               at);
        r->next_ms = ns_integrity_now(ig) + RETRY_SOON_MS;
        return;
    }
    if (rv != 0) {
        fetch_failed(ig, ns_strerror(rv));
        return;
    }
    r->backoff_ms = 0;
    r->next_ms = 0;
    /* Ask for the checkpoint that judges the installed state at once. */
    ig->verdicts.reported_to = 0;
}

static void fetch_reply(void *arg, int status, const struct ns_cmd *reply)
{
    struct ns_integrity *ig = arg;
    struct ns_recovery *r = &ig->recovery;
    if (!r->fetching) {
        return;
    }
    if (ig->stopping) {
        reset_fetch(r);
        return;
    }
    if (status != 0) {
        fetch_failed(ig, ns_strerror(status));
        return;
    }
    if (reply->code != NS_CODE_SUCCESS) {
        fetch_failed(ig, reply->remark != NULL ? reply->remark : "refused");
        return;
    }
    uint64_t at = 0, total = 0, offset = 0;
    if (!ext_u64(reply, NS_EXT_INDEX, &at) ||
        !ext_u64(reply, NS_EXT_TOTAL, &total) ||
        !ext_u64(reply, NS_EXT_OFFSET, &offset) || at == 0 ||
        total > FETCH_MAX_TOTAL || offset != r->got.len ||
        (r->at != 0 && (at != r->at || total != r->total)) ||
        reply->body_len > total - offset ||
        (reply->body_len == 0 && offset < total)) {
        fetch_failed(ig, "inconsistent chunk");
        return;
    }
    r->at = at;
    r->total = total;
    r->n_chunks++;
    if (ns_buf_append(&r->got, reply->body, reply->body_len) != 0) {
        fetch_failed(ig, "out of memory");
        return;
    }
    if (r->got.len < r->total) {
        fetch_next(ig);
        return;
    }
    install(ig);
}

static void follower_tick(struct ns_integrity *ig, uint64_t now)
{
    struct ns_recovery *r = &ig->recovery;
    const struct ns_diverge *d = ns_node_diverge(ig->node);
    if (d->health != NS_DIVERGE_DIVERGED) {
        if (!r->fetching) {
            r->next_ms = 0;
        }
        return;
    }
    uint64_t leader = ns_node_leader_id(ig->node);
    if (r->fetching || leader == 0 || leader == ns_node_id(ig->node)) {
        return; /* a diverged leader steps down first (verdict.c) */
    }
    if (r->next_ms == 0) {
        r->next_ms = now + FIRST_DELAY_MS;
        return;
    }
    if (now < r->next_ms) {
        return;
    }
    NS_LOG(NS_LOG_WARN,
           "recover: copying the state of leader %" PRIu64 " (attempt %" PRIu64
           ")",
           leader, r->n_attempts + 1);
    r->n_attempts++;
    reset_fetch(r);
    r->fetching = true;
    fetch_next(ig);
}

void ns_recovery_tick(struct ns_integrity *ig)
{
    struct ns_recovery *r = &ig->recovery;
    uint64_t now = ns_integrity_now(ig);
    if (r->cache != NULL && now - r->cache_used_ms > CACHE_IDLE_MS) {
        ns_free(r->cache);
        r->cache = NULL;
        r->cache_len = 0;
    }
    follower_tick(ig, now);
}

/* --- the leader --- */

/* Encodes the state at the applied index unless the cache holds it. */
static int refresh_cache(struct ns_integrity *ig, uint64_t applied)
{
    struct ns_recovery *r = &ig->recovery;
    if (r->cache != NULL && r->cache_at == applied) {
        return 0;
    }
    struct ns_buf b;
    ns_buf_init(&b);
    int rv = ns_snapshot_encode(ig->state, &b);
    if (rv == 0 && b.err != 0) {
        rv = b.err;
    }
    if (rv == 0 && b.len > FETCH_MAX_TOTAL) {
        rv = NS_ETOOBIG;
    }
    if (rv != 0) {
        ns_buf_close(&b);
        return rv;
    }
    ns_free(r->cache);
    r->cache = ns_buf_take(&b, &r->cache_len);
    r->cache_at = applied;
    r->cache_term = ns_node_term(ig->node);
    ns_buf_close(&b);
    return 0;
}

int ns_recovery_serve(struct ns_integrity *ig, bool backup, uint64_t index,
                      uint64_t offset, struct ns_recovery_chunk *out,
                      char *remark, size_t cap)
{
    /* A backup is any ready node's own state at its applied index; a
     * diverged node copies from the leader only. */
    if (backup && (!ig->active || !ns_node_is_ready(ig->node) ||
                   ns_node_is_diverged(ig->node))) {
        snprintf(remark, cap,
                 "raftns: this node is not ready or diverged; take the "
                 "snapshot from another node");
        return NS_EAGAIN;
    }
    if (!backup && (!ig->active || !ns_node_is_leader(ig->node) ||
                    ns_node_is_diverged(ig->node))) {
        snprintf(remark, cap, "raftns: not a healthy leader");
        return NS_ENOTLEADER;
    }
    struct ns_recovery *r = &ig->recovery;
    if (index == 0) {
        /* The state is exactly the applied index's: handlers run between
         * raft's apply callbacks. */
        bool share = backup && r->cache != NULL &&
                     uv_now(ig->loop) - r->cache_used_ms < BACKUP_SHARE_MS;
        int rv = offset != 0 ? NS_EINVAL
                 : share     ? 0
                         : refresh_cache(ig, ns_node_last_applied(ig->node));
        if (rv == NS_ENOMEM) {
            return rv;
        }
        if (rv != 0) {
            snprintf(remark, cap, "raftns: cannot serve the state: %s",
                     ns_strerror(rv));
            return rv;
        }
        r->n_served++;
        if (backup) {
            NS_LOG(NS_LOG_INFO,
                   "backup: a snapshot of %zu bytes at index %" PRIu64
                   " is being saved",
                   r->cache_len, r->cache_at);
        } else {
            NS_LOG(NS_LOG_WARN,
                   "recover: a diverged node copies this leader's state (%zu "
                   "bytes at index %" PRIu64 ")",
                   r->cache_len, r->cache_at);
        }
    } else if (r->cache == NULL || r->cache_at != index ||
               offset > r->cache_len) {
        snprintf(remark, cap,
                 "raftns: the state at index %" PRIu64
                 " is no longer held; start again",
                 index);
        return NS_ENOTFOUND;
    }
    size_t chunk = r->cache_len - (size_t)offset;
    size_t max =
        r->chunk != 0 && r->chunk < FETCH_CHUNK ? r->chunk : FETCH_CHUNK;
    if (chunk > max) {
        chunk = max;
    }
    r->cache_used_ms = ns_integrity_now(ig);
    out->at = r->cache_at;
    out->total = r->cache_len;
    out->offset = offset;
    out->term = r->cache_term;
    out->bytes = r->cache + offset;
    out->len = chunk;
    return 0;
}
