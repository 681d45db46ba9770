/* The leader's checks of a membership request before anything is proposed,
 * and the words of a failed change (handle_cluster.c answers with them). They
 * turn raft's bare codes (RAFT_BADID, "need more data") into answers that name
 * the member, its address and what to do. Not the change itself. */
#ifndef RAFTNS_GATEWAY_MEMBER_CHECK_H
#define RAFTNS_GATEWAY_MEMBER_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ns_gateway;
struct ns_req;

/* What the raft configuration and the replicated member table hold of one
 * member id (and of one raft address). */
struct ns_member_view {
    bool in_raft;        /* id is in the raft configuration */
    bool voter;          /* ... as a voter */
    int role;            /* ... its enum ns_node_member_role */
    bool in_table;       /* id has addresses in the replicated table */
    uint64_t addr_owner; /* the member whose raft address it is, or 0 */
    size_t n_voters;     /* in the raft configuration */
    char members[256];   /* "1 2 3" (raft configuration ids) */
};

/* Fills v for id and raft_addr (borrowed; NULL = no address). 0 or
 * NS_ENOMEM. */
int ns_member_view_of(struct ns_gateway *gw, uint64_t id, const char *raft_addr,
                      struct ns_member_view *v);
/* The leader's check of a MEMBER_ADD, MEMBER_REMOVE or LEADER_TRANSFER of
 * member (0 = none; raft_addr borrowed, MEMBER_ADD's) before anything is
 * proposed: refuses, with an answer naming the member, what raft would refuse
 * with a bare code. 0 = go on; 1 = refused and answered; 2 = the id has only
 * addresses left in the member table (no raft member): removing them is the
 * whole removal; NS_ENOMEM. */
int ns_member_check(struct ns_req *req, uint64_t member, const char *raft_addr);
/* The remark of a change that failed with status (an NS_E* code) and raft's
 * errmsg (borrowed, may be NULL), for member id (0 = none) of the request
 * code. Always NUL-terminated. */
void ns_member_change_error(int32_t code, uint64_t id, int status,
                            const char *errmsg, char *out, size_t len);

#endif
