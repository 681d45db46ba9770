/* The life cycle of the replicated state (include/raftns/fsm.h): its tables
 * created empty and freed. Changing it is fsm.c's job, encoding it
 * snapshot.c's. Pure. */
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/fsm.h"

int ns_state_init(struct ns_state *s)
{
    memset(s, 0, sizeof *s);
    ns_acl_init(&s->acl);
    ns_ctl_table_init(&s->ctl);
    s->route = ns_route_create();
    s->kv = ns_kv_create();
    s->config = ns_config_create();
    if (s->route == NULL || s->kv == NULL || s->config == NULL) {
        ns_state_close(s);
        return NS_ENOMEM;
    }
    return 0;
}

void ns_state_member_close(struct ns_member *m)
{
    ns_free(m->raft_addr);
    ns_free(m->client_addr);
    ns_free(m->http_addr);
}

void ns_state_close(struct ns_state *s)
{
    if (s->route != NULL) {
        ns_route_destroy(s->route);
    }
    ns_kv_destroy(s->kv);
    ns_config_destroy(s->config);
    for (size_t i = 0; i < s->n_members; i++) {
        ns_state_member_close(&s->members[i]);
    }
    ns_free(s->members);
    ns_acl_close(&s->acl);
    ns_reqid_table_close(&s->reqids);
    ns_ctl_table_close(&s->ctl);
    memset(s, 0, sizeof *s);
}

size_t ns_state_bytes(const struct ns_state *s)
{
    return ns_route_state_bytes(s->route) + ns_kv_state_bytes(s->kv);
}
