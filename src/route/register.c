/* Life cycle of the plain route value types (decoded registrations, register
 * results). Decoding register bodies is not here
 * (register_body.c). */
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/route.h"

void ns_register_init(struct ns_register *r)
{
    memset(r, 0, sizeof(*r));
    r->acting_master = -1;
    r->heartbeat_timeout_ms = NS_DEFAULT_HEARTBEAT_TIMEOUT_MS;
}

void ns_register_close(struct ns_register *r)
{
    ns_free(r->cluster);
    ns_free(r->broker_name);
    ns_free(r->broker_addr);
    ns_free(r->ha_addr);
    ns_free(r->zone);
    for (size_t i = 0; r->topic_names == NULL && i < r->n_topics; i++) {
        ns_free(r->topics[i].name);
    }
    ns_free(r->topic_names);
    ns_free(r->topics);
    for (size_t i = 0; i < r->n_mappings; i++) {
        ns_free(r->mappings[i].topic);
        ns_free(r->mappings[i].bname);
        ns_free(r->mappings[i].scope);
        ns_free(r->mappings[i].curr_ids);
    }
    ns_free(r->mappings);
    for (size_t i = 0; i < r->n_filter_servers; i++) {
        ns_free(r->filter_servers[i]);
    }
    ns_free(r->filter_servers);
    ns_register_init(r);
}

void ns_register_result_close(struct ns_register_result *res)
{
    ns_free(res->master_addr);
    ns_free(res->ha_addr);
    res->master_addr = NULL;
    res->ha_addr = NULL;
    res->status = NS_REGISTER_OK;
}
