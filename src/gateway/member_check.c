/* Membership pre-checks and failure words (member_check.h). */
#include "gateway/member_check.h"

#include <stdio.h>
#include <string.h>

#include "cluster/cluster.h"
#include "raftns/alloc.h"
#include "raftns/codes.h"
#include "raftns/err.h"
#include "raftns/fsm.h"
#include "raftns/node.h"
#include "gateway/gateway_int.h"

int ns_member_view_of(struct ns_gateway *gw, uint64_t id, const char *raft_addr,
                      struct ns_member_view *v)
{
    struct ns_node_member *m = NULL;
    size_t n = 0, used = 0;
    memset(v, 0, sizeof *v);
    if (ns_node_members(gw->node, &m, &n) != 0) {
        return NS_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        if (m[i].id == id) {
            v->in_raft = true;
            v->voter = m[i].role == NS_MEMBER_VOTER;
            v->role = m[i].role;
        }
        v->n_voters += m[i].role == NS_MEMBER_VOTER;
        if (raft_addr != NULL && strcmp(m[i].raft_addr, raft_addr) == 0) {
            v->addr_owner = m[i].id;
        }
        if (used + 24 < sizeof v->members) {
            used += (size_t)snprintf(
                v->members + used, sizeof v->members - used, "%s%llu",
                used ? " " : "", (unsigned long long)m[i].id);
        }
    }
    ns_free(m);
    for (size_t i = 0; i < gw->state->n_members; i++) {
        v->in_table = v->in_table || gw->state->members[i].id == id;
    }
    return 0;
}

void ns_member_change_error(int32_t code, uint64_t id, int status,
                            const char *errmsg, char *out, size_t len)
{
    /* codes other than these three (a role change) get the generic words */
    const char *what = code == NS_CODE_MEMBER_ADD        ? "adding"
                       : code == NS_CODE_MEMBER_REMOVE   ? "removing"
                       : code == NS_CODE_LEADER_TRANSFER ? "transferring to"
                                                         : "changing";
    switch (status) {
    case NS_EAGAIN:
        snprintf(out, len,
                 "raftns: another membership change or leadership transfer "
                 "is in progress; retry %s %llu when it has finished",
                 what, (unsigned long long)id);
        return;
    case NS_ENOTLEADER:
        snprintf(out, len,
                 "raftns: this node lost the leadership while %s %llu; "
                 "check `raftnsctl status` and retry",
                 what, (unsigned long long)id);
        return;
    default:
        break;
    }
    if (code == NS_CODE_MEMBER_ADD) {
        snprintf(out, len,
                 "raftns: member %llu was not added: %s; its addresses were "
                 "removed again (is its raft address reachable from the "
                 "leader, and is it started with the cluster's secret?)",
                 (unsigned long long)id,
                 errmsg != NULL ? errmsg : ns_strerror(status));
    } else if (code == NS_CODE_LEADER_TRANSFER) {
        snprintf(out, len, "raftns: leadership transfer%s%.0llu failed: %s",
                 id ? " to " : "", (unsigned long long)id,
                 errmsg != NULL ? errmsg : ns_strerror(status));
    } else {
        snprintf(out, len, "raftns: %s member %llu failed: %s", what,
                 (unsigned long long)id,
                 errmsg != NULL ? errmsg : ns_strerror(status));
    }
}

int ns_member_check(struct ns_req *req, uint64_t member, const char *raft_addr)
{
    struct ns_member_view v;
    int32_t code = req->cmd->code;
    if (ns_member_view_of(req->gw, member,
                          code == NS_CODE_MEMBER_ADD ? raft_addr : NULL,
                          &v) != 0) {
        return NS_ENOMEM;
    }
    unsigned long long id = (unsigned long long)member;
    if (code == NS_CODE_MEMBER_ADD && v.in_raft && v.role == NS_MEMBER_SPARE) {
        ns_reply_remarkf(&req->to, NS_CODE_SYSTEM_ERROR,
                         "raftns: member %llu is being added (it is catching "
                         "up as a spare); wait for that add to finish",
                         id);
        return 1;
    }
    if (code == NS_CODE_MEMBER_ADD && v.in_raft) {
        ns_reply_remarkf(&req->to, NS_CODE_SYSTEM_ERROR,
                         "raftns: %llu is already a member (members: %s); "
                         "remove it first or pick another id",
                         id, v.members);
        return 1;
    }
    if (code == NS_CODE_MEMBER_ADD && v.in_table) {
        /* addresses without a raft member: an add of this id is under way
         * (its addresses are recorded first), or one failed before failed
         * adds cleaned up after themselves */
        ns_reply_remarkf(&req->to, NS_CODE_SYSTEM_ERROR,
                         "raftns: member %llu is being added, or is left over "
                         "from an add that failed (remove it with `member "
                         "remove %llu`)",
                         id, id);
        return 1;
    }
    if (code == NS_CODE_MEMBER_ADD && v.addr_owner != 0) {
        ns_reply_remarkf(&req->to, NS_CODE_SYSTEM_ERROR,
                         "raftns: raft address %s is already member %llu's",
                         raft_addr, (unsigned long long)v.addr_owner);
        return 1;
    }
    if (code == NS_CODE_MEMBER_REMOVE && !v.in_raft) {
        if (v.in_table) {
            return 2;
        }
        ns_reply_remarkf(&req->to, NS_CODE_SYSTEM_ERROR,
                         "raftns: %llu is not a member (members: %s)", id,
                         v.members);
        return 1;
    }
    if (code == NS_CODE_LEADER_TRANSFER && member == 0 && v.n_voters < 2) {
        ns_reply_remarkf(&req->to, NS_CODE_SYSTEM_ERROR,
                         "raftns: no other voter to hand the leadership to "
                         "(members: %s)",
                         v.members);
        return 1;
    }
    if (code == NS_CODE_LEADER_TRANSFER && member != 0 && !v.voter) {
        ns_reply_remarkf(&req->to, NS_CODE_SYSTEM_ERROR,
                         "raftns: %llu is not a voter, so it cannot lead "
                         "(members: %s)",
                         id, v.members);
        return 1;
    }
    return 0;
}
