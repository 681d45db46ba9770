/* Private to the controller room's files (controller.c,
 * controller_notify.c). */
#ifndef RAFTNS_SRC_CONTROLLER_INT_H
#define RAFTNS_SRC_CONTROLLER_INT_H

#include "controller/controller.h"

/* One outgoing connection to a broker's remoting address, for 1008. */
struct ns_controller_peer {
    char *addr;           /* owned */
    struct ns_peer *peer; /* owned */
    int32_t epoch;        /* the newest master epoch sent there */
};

/* After a committed election of group name: one oneway 1008 to every member
 * whose heartbeat is alive (docs/controller.md §3). Best effort. */
void ns_controller_notify(struct ns_controller *c, const char *name);
/* Closes the peers (stop). */
void ns_controller_notify_close(struct ns_controller *c);

#endif
