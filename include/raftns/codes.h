/* Request and reply codes of the remoting protocol that raftns uses.
 *
 * Stock RocketMQ codes come from one table, NS_CODE_TABLE, with the names the
 * Java RequestCode / ResponseCode classes give them (docs/protocol.md §3); each
 * row yields the constant NS_CODE_<NAME>. The private node-to-node and
 * cluster-admin request codes (9001-9010, 9012-9013, 9016-9018) that raftns
 * nodes accept on their CLIENT port follow, with the ext fields of each request
 * and reply; nothing in that part is Java.
 *
 * Every private request but STATUS and BROKER_LIVENESS is signed with the
 * cluster secret (raftns/sign.h: ext raftnsTs, raftnsNonce, raftnsSig; the
 * secret itself never travels). A missing, wrong, expired or replayed signature
 * is answered with NO_PERMISSION and a remark saying why, and logged at WARN.
 * Replies use SUCCESS (0), or SYSTEM_ERROR (1) with a remark. */
#ifndef RAFTNS_CODES_H
#define RAFTNS_CODES_H

#include <stdint.h>

/* X(kind, NAME, number). kind RESPONSE: a reply code raftns sends or reads;
 * REQUEST: a request code raftns answers (src/gateway/dispatch.c) or sends
 * (tools/). Numbers are unique within a kind: ns_code_request_name and
 * ns_code_response_name switch over the table, so a duplicate fails to
 * compile (a duplicate case label). */
#define NS_CODE_TABLE(X)                                                       \
    X(RESPONSE, SUCCESS, 0)                                                    \
    X(RESPONSE, SYSTEM_ERROR, 1)                                               \
    X(RESPONSE, SYSTEM_BUSY, 2)                                                \
    X(RESPONSE, REQUEST_CODE_NOT_SUPPORTED, 3)                                 \
    X(RESPONSE, NO_PERMISSION, 16)                                             \
    X(RESPONSE, TOPIC_NOT_EXIST, 17)                                           \
    X(RESPONSE, QUERY_NOT_FOUND, 22)                                           \
    X(RESPONSE, GO_AWAY, 1500)                                                 \
    X(RESPONSE, CONTROLLER_FENCED_MASTER_EPOCH, 2000)                          \
    X(RESPONSE, CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH, 2001)                  \
    X(RESPONSE, CONTROLLER_INVALID_MASTER, 2002)                               \
    X(RESPONSE, CONTROLLER_INVALID_REPLICAS, 2003)                             \
    X(RESPONSE, CONTROLLER_MASTER_NOT_AVAILABLE, 2004)                         \
    X(RESPONSE, CONTROLLER_INVALID_REQUEST, 2005)                              \
    X(RESPONSE, CONTROLLER_BROKER_NOT_ALIVE, 2006)                             \
    X(RESPONSE, CONTROLLER_NOT_LEADER, 2007)                                   \
    X(RESPONSE, CONTROLLER_BROKER_METADATA_NOT_EXIST, 2008)                    \
    X(RESPONSE, CONTROLLER_INVALID_CLEAN_BROKER_METADATA, 2009)                \
    X(RESPONSE, CONTROLLER_BROKER_NEED_TO_BE_REGISTERED, 2010)                 \
    X(RESPONSE, CONTROLLER_MASTER_STILL_EXIST, 2011)                           \
    X(RESPONSE, CONTROLLER_ELECT_MASTER_FAILED, 2012)                          \
    X(RESPONSE, CONTROLLER_ALTER_SYNC_STATE_SET_FAILED, 2013)                  \
    X(RESPONSE, CONTROLLER_BROKER_ID_INVALID, 2014)                            \
    X(REQUEST, PUT_KV_CONFIG, 100)                                             \
    X(REQUEST, GET_KV_CONFIG, 101)                                             \
    X(REQUEST, DELETE_KV_CONFIG, 102)                                          \
    X(REQUEST, REGISTER_BROKER, 103)                                           \
    X(REQUEST, UNREGISTER_BROKER, 104)                                         \
    X(REQUEST, GET_ROUTEINFO_BY_TOPIC, 105)                                    \
    X(REQUEST, GET_BROKER_CLUSTER_INFO, 106)                                   \
    X(REQUEST, WIPE_WRITE_PERM_OF_BROKER, 205)                                 \
    X(REQUEST, GET_ALL_TOPIC_LIST_FROM_NAMESERVER, 206)                        \
    X(REQUEST, DELETE_TOPIC_IN_NAMESRV, 216)                                   \
    X(REQUEST, REGISTER_TOPIC_IN_NAMESRV, 217)                                 \
    X(REQUEST, GET_KVLIST_BY_NAMESPACE, 219)                                   \
    X(REQUEST, GET_TOPICS_BY_CLUSTER, 224)                                     \
    X(REQUEST, GET_SYSTEM_TOPIC_LIST_FROM_NS, 304)                             \
    X(REQUEST, GET_UNIT_TOPIC_LIST, 311)                                       \
    X(REQUEST, GET_HAS_UNIT_SUB_TOPIC_LIST, 312)                               \
    X(REQUEST, GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, 313)                        \
    X(REQUEST, UPDATE_NAMESRV_CONFIG, 318)                                     \
    X(REQUEST, GET_NAMESRV_CONFIG, 319)                                        \
    X(REQUEST, QUERY_DATA_VERSION, 322)                                        \
    X(REQUEST, ADD_WRITE_PERM_OF_BROKER, 327)                                  \
    X(REQUEST, GET_BROKER_MEMBER_GROUP, 901)                                   \
    X(REQUEST, BROKER_HEARTBEAT, 904)                                          \
    X(REQUEST, CONTROLLER_ALTER_SYNC_STATE_SET, 1001)                          \
    X(REQUEST, CONTROLLER_ELECT_MASTER, 1002)                                  \
    X(REQUEST, CONTROLLER_REGISTER_BROKER, 1003)                               \
    X(REQUEST, CONTROLLER_GET_REPLICA_INFO, 1004)                              \
    X(REQUEST, CONTROLLER_GET_METADATA_INFO, 1005)                             \
    X(REQUEST, CONTROLLER_GET_SYNC_STATE_DATA, 1006)                           \
    X(REQUEST, NOTIFY_BROKER_ROLE_CHANGED, 1008)                               \
    X(REQUEST, UPDATE_CONTROLLER_CONFIG, 1009)                                 \
    X(REQUEST, GET_CONTROLLER_CONFIG, 1010)                                    \
    X(REQUEST, CLEAN_BROKER_DATA, 1011)                                        \
    X(REQUEST, CONTROLLER_GET_NEXT_BROKER_ID, 1012)                            \
    X(REQUEST, CONTROLLER_APPLY_BROKER_ID, 1013)

enum ns_code {
#define NS_CODE_ENUM(kind, name, number) NS_CODE_##name = (number),
    NS_CODE_TABLE(NS_CODE_ENUM)
#undef NS_CODE_ENUM
};

/* The Java name of a stock request code ("GET_ROUTEINFO_BY_TOPIC"), or NULL
 * for a code not in the table. Static storage. */
const char *ns_code_request_name(int32_t code);
/* The same for a reply code ("TOPIC_NOT_EXIST"). */
const char *ns_code_response_name(int32_t code);

/* --- ext keys --- */
#define NS_EXT_FROM "raftnsFrom"              /* sender node id (decimal) */
#define NS_EXT_CONSISTENT "raftnsConsistent"  /* on any READ: "true" */
#define NS_EXT_INDEX "raftnsIndex"            /* a raft log index (decimal) */
#define NS_EXT_LEADER "raftnsLeader"          /* leader node id (decimal) */
#define NS_EXT_RES_TYPE "raftnsResType"       /* enum ns_command_type applied */
#define NS_EXT_REG_STATUS "raftnsRegStatus"   /* enum ns_register_status */
#define NS_EXT_REG_MASTER "raftnsRegMaster"   /* register result master addr */
#define NS_EXT_REG_HA "raftnsRegHa"           /* register result ha addr */
#define NS_EXT_COUNT "raftnsCount"            /* ns_apply_result.count */
#define NS_EXT_REQID "raftnsReqid"            /* ns_apply_result.reqid */
#define NS_EXT_RESEND "raftnsResend"          /* on FORWARD: "true" */
#define NS_EXT_ID "raftnsId"                  /* a member id (decimal) */
#define NS_EXT_ROLE "raftnsRole"              /* "voter" | "standby" */
#define NS_EXT_RAFT_ADDR "raftnsRaftAddr"     /* IPv4 a.b.c.d:port */
#define NS_EXT_CLIENT_ADDR "raftnsClientAddr" /* IPv4 a.b.c.d:port */
#define NS_EXT_HTTP_ADDR "raftnsHttpAddr"     /* IPv4 a.b.c.d:port */
#define NS_EXT_ACL_OP "raftnsAclOp"           /* "add" | "remove" */
#define NS_EXT_ACL_ACCESS_KEY "raftnsAclAccessKey"
#define NS_EXT_ACL_SECRET_KEY "raftnsAclSecretKey"
#define NS_EXT_ACL_ROLE "raftnsAclRole"         /* admin | broker | reader */
#define NS_EXT_ACL_NETWORKS "raftnsAclNetworks" /* CIDRs, ',' separated */
#define NS_EXT_OFFSET "raftnsOffset" /* byte offset of a chunk (decimal) */
#define NS_EXT_TOTAL "raftnsTotal"   /* total bytes of a chunked body */
#define NS_EXT_TERM "raftnsTerm"     /* a raft term (decimal) */
/* On a reply to a stock read that another node answered (docs/readiness.md):
 * the id of the node whose state the answer comes from (decimal). */
#define NS_EXT_SERVED_BY "raftnsServedBy"

/* FORWARD: a follower hands an encoded command to the leader.
 * Request: body = ns_command_encode bytes; ext from. Only command types a
 * client request produces (ns_command_is_client_write); others get
 * NO_PERMISSION.
 * Reply 0: ext index (log index of the entry, applied on the leader), resType,
 *   and for REGISTER_BROKER regStatus, regMaster / regHa (absent when NULL);
 *   count for WIPE/ADD_WRITE_PERM. The forwarding node answers its client only
 *   once ITS OWN state machine applied index.
 * Reply 1: remark says why (not leader, no leader, timeout, shutting down). The
 *   leader de-duplicates identical pending commands (leader_time_ms ignored).
 */
#define NS_CODE_FORWARD 9001

/* READ_INDEX: the leader's read point.
 * Request: from. The leader runs raft_barrier and answers with
 * Reply 0: ext index = its applied index after the barrier, leader = its id.
 * Used for readiness at join and for raftnsConsistent=true reads. */
#define NS_CODE_READ_INDEX 9002

/* MEMBER_LIST: the raft configuration joined with the replicated addresses.
 * Request: no ext. Reply 0: body = JSON
 *   {"leader":N,"term":N,"commitIndex":N,"appliedIndex":N,"members":[
 *     {"id":N,"raft":"ip:port","client":"ip:port","http":"ip:port",
 *      "role":"voter|standby|spare"}...]}  (addresses "" when unknown). */
#define NS_CODE_MEMBER_LIST 9003

/* MEMBER_ADD: leader only (a follower forwards it to the leader).
 * Request: id, raftAddr, clientAddr, httpAddr (optional), role (optional:
 * "voter", the default, or "standby"). The leader records the addresses
 * (SET_MEMBER), raft_add, then raft_assign VOTER or STANDBY (one change at a
 * time; on RAFT_NOCONNECTION the spare is removed again). A standby receives
 * the log and serves reads and liveness reports, but neither votes nor counts
 * for commits. Reply 0 when the new member has its role; 1 with remark
 * otherwise. */
#define NS_CODE_MEMBER_ADD 9004

/* MEMBER_REMOVE: Request: id. raft_remove, then SET_MEMBER with no
 * addresses. Reply 0 / 1 with remark. Removing the leader itself transfers
 * leadership first. */
#define NS_CODE_MEMBER_REMOVE 9005

/* LEADER_TRANSFER: Request: id (optional; 0 or absent = let raft
 * pick the most up-to-date voter). Sent to any node (forwarded to the leader).
 * Reply 0 once the transfer finished: ext leader = the new leader id. */
#define NS_CODE_LEADER_TRANSFER 9006

/* 9007: liveness reports (owned by the expiry work: src/liveness/liveness.c).
 */
#define NS_CODE_LIVENESS_REPORT 9007

/* STATUS: this node's /status JSON document (src/observe/observe.c) as the
 * reply body, for raftnsctl status. Read-only: no secret needed; answered even
 * when the node is not ready or diverged. */
#define NS_CODE_STATUS 9008

/* ACL_UPDATE: add, replace or remove an account (include/raftns/acl.h).
 * Request: ext secret, aclOp "add" (aclAccessKey, aclSecretKey, aclRole,
 * aclNetworks optional) or "remove" (aclAccessKey). Sent to any node (a
 * follower forwards the ACL_PUT / ACL_REMOVE command like any write).
 * Reply 0 once applied on the node asked; 1 with a remark for bad fields. With
 * ACL on it needs an admin signature (AccessKey/Signature), like 9004-9006. */
#define NS_CODE_ACL_UPDATE 9009

/* ACL_LIST: the accounts of this node's replicated state, never their secret
 * keys. Request: ext secret. Reply 0: body = JSON
 *   {"accounts":[{"accessKey":"..","role":"admin","networks":["a.b.c.d/p"]}],
 *    "seeded":true}
 * sorted by access key. With ACL on it needs an admin signature. */
#define NS_CODE_ACL_LIST 9010

/* DIGEST_REPORT: a voter's state digests at the checkpoints no verdict has
 * judged yet, for the leader's majority tally (docs/divergence.md).
 * Request: ext from; body = u16 version 1, u8 flags (bit 0: this node
 * installed a healthy state and waits for a checkpoint to be judged), u32 n
 * (at most 16) {u64 checkpoint index, u64 digest}. Sent about once a second
 * while such digests exist. Reply 0, or 1 with a remark (not the leader,
 * malformed). */
#define NS_CODE_DIGEST_REPORT 9012

/* STATE_FETCH: a diverged node copies the leader's whole state.
 * Request: ext from, index (0 for the first chunk, else the index the first
 * reply named), offset. Reply 0: body = bytes [offset, offset + chunk) of
 * ns_snapshot_encode of the leader's state at its applied index; ext index =
 * that applied index, total = the encoding's size, offset, term = the node's
 * term when it encoded the state. Reply 1 with a remark when this node is not
 * the leader, is itself diverged, or no longer holds the encoding of that
 * index (start again at offset 0).
 * Without ext from it is an operator's backup (raftnsctl snapshot save): any
 * ready, healthy node answers with its own state the same way; with ACL on it
 * needs an admin signature. */
#define NS_CODE_STATE_FETCH 9013
/* READ_FORWARD: a node that cannot answer a stock read from its own state (not
 * ready, diverged; src/gateway/held_read.c) hands the whole request to the
 * leader. Node to node only: the request carries raftnsFrom and is signed.
 * Request: body = the client's request frame, re-encoded (a read code only;
 * others get NO_PERMISSION). The receiver answers it as if the client had asked
 * it, and its reply carries NS_EXT_SERVED_BY = its id; the forwarding node
 * relays that reply to its client as it is. A receiver that is not ready or
 * diverged itself answers 1 without it (the sender tries again). */
#define NS_CODE_READ_FORWARD 9016

/* MEMBER_ASSIGN: promote a standby to voter or demote a voter to standby
 * (raftnsctl member promote|demote). Request: id, role ("voter" | "standby").
 * Leader only (a follower relays it); the leader does not demote itself
 * (transfer leadership first). Promotion lets the member catch up first.
 * Reply 0 once the new configuration is committed; 1 with a remark (unknown
 * member, already that role, could not catch up). Admin, like MEMBER_ADD. */
#define NS_CODE_MEMBER_ASSIGN 9017

/* BROKER_LIVENESS: this node's broker liveness table (raftnsctl brokers).
 * Read-only like STATUS: no secret needed; with ACL on, a reader's. Request:
 * no ext. Reply 0: body = JSON {"node":N,"leader":bool,"brokers":[
 *   {"cluster":"..","brokerAddr":"ip:port","timeoutMs":N,"heardHere":bool,
 *    "lastHeartbeatAgoMs":N (-1: this node never heard it),
 *    "seenAgoMs":N (any node, as this one knows; the leader's is merged),
 *    "holders":[node ids holding its connection]}...]} in no order. */
#define NS_CODE_BROKER_LIVENESS 9018

#define NS_CODE_PRIVATE_MIN 9001
#define NS_CODE_PRIVATE_MAX 9018

#endif
