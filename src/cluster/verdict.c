/* Divergence by majority, the node-local half (docs/divergence.md): followers
 * report their digests of unjudged checkpoints to the leader
 * (NS_CODE_DIGEST_REPORT), the leader tallies them with its own and proposes
 * a VERDICT once a majority of voters holds one digest, and a leader that is
 * itself diverged hands leadership to a healthy voter. The majority rule and
 * the judgement are pure (raft/diverge.c); copying a healthy state is
 * recovery.c. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cluster/cluster.h"
#include "cluster/integrity.h"
#include "raftns/alloc.h"
#include "raftns/codes.h"
#include "raftns/err.h"
#include "raftns/log.h"

#define REPORT_VERSION 1
#define REPORT_MAX_MARKS NS_DIVERGE_RING
#define REPORT_FLAG_RECOVERING 1u
#define REPORT_EVERY_MS 1000
#define REPORT_TIMEOUT_MS 3000
#define TRANSFER_EVERY_MS 2000

/* The voters of the current configuration: *ids owned (ns_free). */
static int voters_of(struct ns_node *node, uint64_t **ids, size_t *n)
{
    struct ns_node_member *m = NULL;
    size_t n_m = 0;
    int rv = ns_node_members(node, &m, &n_m);
    if (rv != 0) {
        return rv;
    }
    *ids = ns_calloc(n_m ? n_m : 1, sizeof **ids);
    if (*ids == NULL) {
        ns_free(m);
        return NS_ENOMEM;
    }
    *n = 0;
    for (size_t i = 0; i < n_m; i++) {
        if (m[i].role == NS_MEMBER_VOTER) {
            (*ids)[(*n)++] = m[i].id;
        }
    }
    ns_free(m);
    return 0;
}

/* A recovering node that has no digest of the installed state yet needs a
 * checkpoint to be judged at all. */
static bool wants_checkpoint(const struct ns_diverge *d)
{
    return d->health == NS_DIVERGE_RECOVERING && d->last.index == 0;
}

/* --- follower: reports --- */

static void report_done(void *arg, int status, const struct ns_cmd *reply)
{
    struct ns_integrity *ig = arg;
    struct ns_verdicts *v = &ig->verdicts;
    v->report_in_flight = false;
    if (status != 0 || reply->code != NS_CODE_SUCCESS) {
        NS_LOG(NS_LOG_DEBUG, "verdict: digest report refused (%s)",
               status != 0             ? ns_strerror(status)
               : reply->remark != NULL ? reply->remark
                                       : "no remark");
        v->reported_to = 0; /* send again at the next tick */
    }
}

static void send_report(struct ns_integrity *ig, uint64_t now)
{
    struct ns_verdicts *v = &ig->verdicts;
    uint64_t leader = ns_node_leader_id(ig->node);
    if (v->report_in_flight || leader == 0 || leader == ns_node_id(ig->node)) {
        return;
    }
    const struct ns_diverge *d = ns_node_diverge(ig->node);
    struct ns_diverge_mark marks[REPORT_MAX_MARKS];
    size_t n = ns_diverge_unjudged(d, marks, REPORT_MAX_MARKS);
    bool recovering = wants_checkpoint(d);
    if (n == 0 && !recovering) {
        return;
    }
    uint64_t newest = n > 0 ? marks[n - 1].index : 0;
    /* New digests go out at once; unjudged ones again every second, in case
     * a report or the leader was lost. */
    if (leader == v->reported_to && newest == v->reported_upto &&
        now - v->last_report_ms < REPORT_EVERY_MS) {
        return;
    }
    struct ns_buf body;
    ns_buf_init(&body);
    ns_buf_put_u16(&body, REPORT_VERSION);
    ns_buf_put_u8(&body, recovering ? REPORT_FLAG_RECOVERING : 0);
    ns_buf_put_u32(&body, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        ns_buf_put_u64(&body, marks[i].index);
        ns_buf_put_u64(&body, marks[i].digest);
    }
    struct ns_cmd cmd;
    ns_cmd_init(&cmd);
    cmd.code = NS_CODE_DIGEST_REPORT;
    cmd.has_ext = true;
    cmd.body = body.data;
    cmd.body_len = body.len;
    int rv = body.err;
    if (rv == 0) {
        rv = ns_cluster_leader_request(ig->cluster, &cmd, REPORT_TIMEOUT_MS,
                                       report_done, ig);
    }
    if (rv == 0) {
        v->report_in_flight = true;
        v->reported_to = leader;
        v->reported_upto = newest;
        v->last_report_ms = now;
        v->n_reports_sent++;
    } else {
        NS_LOG(NS_LOG_DEBUG, "verdict: cannot report digests: %s",
               ns_strerror(rv));
    }
    cmd.body = NULL;
    cmd.body_len = 0;
    ns_cmd_close(&cmd);
    ns_buf_close(&body);
}

/* --- leader: tally and verdicts --- */

static void verdict_done(void *arg, int status, uint64_t index,
                         const struct ns_apply_result *res)
{
    struct ns_integrity *ig = arg;
    (void)index;
    (void)res;
    ig->verdicts.in_flight = false;
    if (status != 0) {
        NS_LOG(NS_LOG_WARN, "verdict: proposal not applied: %s",
               ns_strerror(status));
    }
}

static void log_ids(char *out, size_t size, const uint64_t *ids, size_t n)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && used < size; i++) {
        int k = snprintf(out + used, size - used, "%s%" PRIu64, i ? "," : "",
                         ids[i]);
        used += k > 0 ? (size_t)k : 0;
    }
}

static void propose_verdict(struct ns_integrity *ig, struct ns_command *cmd)
{
    cmd->leader_time_ms = ns_clock_wall_ms();
    int rv =
        ns_cluster_submit(ig->cluster, cmd, NS_SUBMIT_LEADER, verdict_done, ig);
    char agree[256], dissent[256];
    log_ids(agree, sizeof agree, cmd->u.verdict.agree, cmd->u.verdict.n_agree);
    log_ids(dissent, sizeof dissent, cmd->u.verdict.dissent,
            cmd->u.verdict.n_dissent);
    if (rv == 0) {
        ig->verdicts.in_flight = true;
        ig->verdicts.n_proposed++;
        NS_LOG(cmd->u.verdict.n_dissent > 0 ? NS_LOG_WARN : NS_LOG_INFO,
               "verdict: checkpoint %" PRIu64 ": digest %016" PRIx64
               " held by voters [%s], other digests by [%s]",
               cmd->u.verdict.index, cmd->u.verdict.digest, agree, dissent);
    } else {
        NS_LOG(NS_LOG_WARN, "verdict: cannot propose: %s", ns_strerror(rv));
    }
}

static void decide(struct ns_integrity *ig)
{
    struct ns_verdicts *v = &ig->verdicts;
    if (!v->leading || v->in_flight || !ns_node_is_leader(ig->node)) {
        return;
    }
    uint64_t *voters = NULL;
    size_t n_voters = 0;
    if (voters_of(ig->node, &voters, &n_voters) != 0) {
        return;
    }
    uint64_t no_majority = v->tally.n_no_majority;
    struct ns_command cmd;
    int rv = ns_diverge_tally_decide(&v->tally, voters, n_voters, &cmd);
    if (v->tally.n_no_majority != no_majority) {
        NS_LOG(NS_LOG_ERROR,
               "verdict: no digest at checkpoint %" PRIu64
               " is held by a majority of the %zu voters: no verdict",
               v->tally.no_majority_index, n_voters);
    }
    if (rv == NS_DIVERGE_MAJORITY) {
        propose_verdict(ig, &cmd);
        ns_command_close(&cmd);
    } else if (rv == NS_ENOMEM) {
        NS_LOG(NS_LOG_ERROR, "verdict: out of memory deciding");
    }
    ns_free(voters);
}

int ns_verdict_take_report(struct ns_integrity *ig, uint64_t from,
                           const uint8_t *body, size_t len,
                           const char **refusal)
{
    if (from == 0) {
        *refusal = "digest report without a sender id";
        return NS_EINVAL;
    }
    if (!ig->active || !ig->verdicts.leading || !ns_node_is_leader(ig->node)) {
        *refusal = "raftns: not the leader";
        return NS_ENOTLEADER;
    }
    struct ns_rd rd;
    ns_rd_init(&rd, body, len);
    uint16_t version = ns_rd_u16(&rd);
    uint8_t flags = ns_rd_u8(&rd);
    uint32_t n = ns_rd_u32(&rd);
    if (rd.err != 0 || version != REPORT_VERSION || n > REPORT_MAX_MARKS ||
        ns_rd_left(&rd) != (size_t)n * 16) {
        NS_LOG(NS_LOG_WARN, "verdict: malformed digest report from node %lld",
               (long long)from);
        *refusal = "malformed digest report";
        return NS_EPROTO;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint64_t index = ns_rd_u64(&rd);
        uint64_t digest = ns_rd_u64(&rd);
        ns_diverge_tally_add(&ig->verdicts.tally, index, from, digest);
    }
    if (flags & REPORT_FLAG_RECOVERING) {
        ig->ckpt.wanted = true;
    }
    ig->verdicts.n_reports_received++;
    decide(ig);
    return 0;
}

/* --- leader: stepping down --- */

static void transfer_done(void *arg, int status, const char *errmsg)
{
    struct ns_integrity *ig = arg;
    (void)ig;
    if (status == 0) {
        NS_LOG(NS_LOG_WARN, "verdict: diverged leader handed leadership over");
    } else {
        NS_LOG(NS_LOG_WARN, "verdict: leadership transfer failed: %s",
               errmsg != NULL ? errmsg : ns_strerror(status));
    }
}

static void step_down(struct ns_integrity *ig, uint64_t now)
{
    struct ns_verdicts *v = &ig->verdicts;
    if (!ns_node_is_diverged(ig->node) ||
        now - v->last_transfer_ms < TRANSFER_EVERY_MS) {
        return;
    }
    uint64_t *voters = NULL;
    size_t n_voters = 0;
    if (voters_of(ig->node, &voters, &n_voters) != 0) {
        return;
    }
    uint64_t self = ns_node_id(ig->node);
    uint64_t target = ns_diverge_transfer_target(ns_node_diverge(ig->node),
                                                 self, voters, n_voters);
    ns_free(voters);
    v->last_transfer_ms = now;
    int rv = ns_node_transfer(ig->node, target, transfer_done, ig);
    NS_LOG(NS_LOG_ERROR,
           "verdict: this leader's state diverged: handing leadership to "
           "%" PRIu64 " (0 = any voter)%s%s",
           target, rv == 0 ? "" : ": ", rv == 0 ? "" : ns_strerror(rv));
}

/* --- the tick --- */

static void follow_role(struct ns_integrity *ig)
{
    struct ns_verdicts *v = &ig->verdicts;
    bool leader = ns_node_is_leader(ig->node);
    if (leader && !v->leading) {
        ns_diverge_tally_init(&v->tally);
        v->leading = true;
        v->in_flight = false;
    } else if (!leader && v->leading) {
        v->leading = false;
        v->reported_to = 0; /* report everything to the next leader */
    }
}

void ns_verdict_tick(struct ns_integrity *ig)
{
    uint64_t now = ns_integrity_now(ig);
    follow_role(ig);
    const struct ns_diverge *d = ns_node_diverge(ig->node);
    if (!ig->verdicts.leading) {
        send_report(ig, now);
        return;
    }
    struct ns_verdicts *v = &ig->verdicts;
    ns_diverge_tally_close(&v->tally, d->verdict.index);
    struct ns_diverge_mark marks[REPORT_MAX_MARKS];
    size_t n = ns_diverge_unjudged(d, marks, REPORT_MAX_MARKS);
    for (size_t i = 0; i < n; i++) {
        ns_diverge_tally_add(&v->tally, marks[i].index, ns_node_id(ig->node),
                             marks[i].digest);
    }
    decide(ig);
    step_down(ig, now);
}
