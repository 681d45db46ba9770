/* The divergence work of a cluster as one object: its settings, its tick and
 * its end. What each part does is checkpoint.c, verdict.c and recovery.c. */
#include <string.h>

#include "cluster/cluster_int.h"
#include "cluster/integrity.h"

struct ns_integrity *ns_cluster_integrity(struct ns_cluster *cl)
{
    return &cl->integrity;
}

void ns_integrity_init(struct ns_integrity *ig, uv_loop_t *loop,
                       struct ns_state *state, struct ns_node *node,
                       struct ns_cluster *cluster)
{
    memset(ig, 0, sizeof *ig);
    ig->loop = loop;
    ig->state = state;
    ig->node = node;
    ig->cluster = cluster;
    ns_integrity_configure(ig, 0, 0, 0, 0);
}

void ns_integrity_configure(struct ns_integrity *ig, unsigned every_entries,
                            unsigned every_ms, uint64_t corrupt_at,
                            size_t chunk)
{
    ns_checkpoint_init(&ig->ckpt, every_entries, every_ms, corrupt_at);
    ig->recovery.chunk = chunk;
}

void ns_integrity_start(struct ns_integrity *ig)
{
    ig->active = true;
}

void ns_integrity_stop(struct ns_integrity *ig)
{
    ig->active = false;
    ig->stopping = true;
}

void ns_integrity_close(struct ns_integrity *ig)
{
    ns_recovery_close(&ig->recovery);
}

void ns_integrity_tick(struct ns_integrity *ig)
{
    if (ig->stopping) {
        return;
    }
    ns_checkpoint_tick(ig);
    ns_verdict_tick(ig);
    ns_recovery_tick(ig);
}
