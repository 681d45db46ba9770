/* Parts of the command encoding (raft/command.c) kept in their own files. Only
 * raft/command*.c include this. Pure. */
#ifndef RAFTNS_RAFT_COMMAND_INT_H
#define RAFTNS_RAFT_COMMAND_INT_H

#include "raftns/buf.h"
#include "raftns/command.h"

/* The topics of a REGISTER_BROKER in version 3's compact form
 * (raft/command_topics.c). */
void ns_command_topics_encode(const struct ns_register *r, struct ns_buf *b);
/* Fills g->topics and g->topic_names (owned by g, also on failure). 0,
 * NS_EPROTO or NS_ENOMEM. */
int ns_command_topics_decode(struct ns_rd *r, struct ns_register *g);

#endif
