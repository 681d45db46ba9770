/* Reads held and re-dispatched: a raftnsConsistent=true read waits for the
 * leader's read index to be applied here, then runs again through dispatch
 * (DESIGN.md §6). It answers only the failures of a hold, never a read. */
#include <string.h>

#include "peer.h"
#include "raftns/alloc.h"
#include "raftns/codes.h"
#include "raftns/err.h"

#define CONSISTENT_WAIT_MS 3000

/* --- raftnsConsistent=true reads: hold, confirm with the leader, re-run --- */

struct held_frame {
    size_t len;
    uint8_t bytes[]; /* the request, re-encoded */
};

static void consistent_done(struct ns_pending *p, int status,
                            const struct ns_apply_result *res)
{
    (void)res;
    struct ns_conn *conn = p->to.conn;
    if (status != 0) {
        ns_reply_remarkf(&p->to, NS_CODE_SYSTEM_ERROR,
                         "raftns: consistent read not confirmed by a leader: "
                         "%s",
                         ns_strerror(status));
        return;
    }
    if (conn == NULL || conn->closing) {
        return;
    }
    struct held_frame *frame = p->data;
    struct ns_cmd cmd;
    if (ns_cmd_decode(frame->bytes, frame->len, &cmd) != 0) {
        ns_reply_simple(&p->to, NS_CODE_SYSTEM_ERROR, "out of memory");
        return;
    }
    /* confirmed: the re-dispatched request is answered from local state */
    int rv = ns_cmd_ext_set(&cmd, NS_EXT_CONSISTENT, "confirmed");
    if (rv == 0) {
        rv = ns_dispatch_authorised(p->srv, conn, &cmd);
    }
    ns_cmd_close(&cmd);
    if (rv != 0) {
        ns_conn_close(conn, "error answering a consistent read");
    }
}

static void consistent_applied(void *arg, int status)
{
    ns_pending_finish(arg, status, 0, NULL);
}

static void consistent_index(void *arg, int status, uint64_t index)
{
    struct ns_pending *p = arg;
    if (status == 0) {
        status = ns_node_wait_applied(p->srv->node, index, CONSISTENT_WAIT_MS,
                                      consistent_applied, p);
        if (status == 0) {
            return;
        }
    }
    ns_pending_finish(p, status, 0, NULL);
}

static void consistent_reply(void *arg, int status, const struct ns_cmd *reply)
{
    int64_t index = 0;
    if (status == 0 &&
        (reply->code != NS_CODE_SUCCESS ||
         !ns_ext_int64(reply, NS_EXT_INDEX, &index) || index < 0)) {
        status = NS_ENOTLEADER;
    }
    consistent_index(arg, status, (uint64_t)index);
}

bool ns_held_read_consistent(struct ns_req *req)
{
    bool want = false;
    if (!ns_ext_bool(req->cmd, NS_EXT_CONSISTENT, &want) || !want) {
        return false;
    }
    struct ns_buf b;
    ns_buf_init(&b);
    if (ns_cmd_encode(req->cmd, &b) != 0 || b.err != 0) {
        ns_buf_close(&b);
        return false; /* answered unconfirmed rather than not at all */
    }
    struct held_frame *frame = ns_malloc(sizeof *frame + b.len);
    struct ns_pending *p =
        frame != NULL ? ns_pending_new(req, consistent_done) : NULL;
    if (p == NULL) {
        ns_free(frame);
        ns_buf_close(&b);
        return false;
    }
    frame->len = b.len;
    memcpy(frame->bytes, b.data, b.len);
    ns_buf_close(&b);
    p->data = frame; /* freed with p */
    int rv;
    if (ns_node_is_leader(req->srv->node)) {
        rv = ns_node_read_index(req->srv->node, consistent_index, p);
    } else {
        struct ns_cmd ri;
        ns_cmd_init(&ri);
        ri.code = NS_CODE_READ_INDEX;
        ri.language = NS_LANG_OTHER;
        rv = ns_cluster_leader_request(req->srv, &ri, CONSISTENT_WAIT_MS,
                                       consistent_reply, p);
        ns_cmd_close(&ri);
    }
    if (rv != 0) {
        ns_pending_finish(p, rv, 0, NULL);
    }
    return true;
}
