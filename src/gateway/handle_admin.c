/* Handlers of the administrative route changes: 205 wipe / 327 add write
 * permission, 216 delete topic, 217 register topic (docs/protocol.md §5.8).
 * Each validates its request and proposes one command; the route semantics are
 * in src/route. */
#include <stdio.h>

#include "raftns/alloc.h"
#include "raftns/codes.h"
#include "raftns/err.h"
#include "raftns/json.h"
#include "gateway/gateway_int.h"

static void perm_done(struct ns_pending *p, int status,
                      const struct ns_apply_result *res)
{
    if (status != 0) {
        ns_reply_write_error(&p->to, status);
        return;
    }
    struct ns_cmd reply;
    char count[24];
    snprintf(count, sizeof count, "%d", (int)res->count);
    ns_reply_init(&reply, &p->to, NS_CODE_SUCCESS);
    if (ns_cmd_ext_set(&reply,
                       p->to.req_code == NS_CODE_WIPE_WRITE_PERM_OF_BROKER
                           ? "wipeTopicCount"
                           : "addTopicCount",
                       count) != 0) {
        ns_cmd_close(&reply);
        return;
    }
    ns_reply_send(&p->to, &reply);
}

static int propose_perm(struct ns_req *req, enum ns_command_type type)
{
    const char *name = ns_cmd_ext_find(req->cmd, "brokerName");
    struct ns_command c;
    ns_command_init(&c, type);
    c.leader_time_ms = ns_clock_wall_ms();
    c.u.perm.broker_name = ns_strdup(name != NULL ? name : "");
    int rv = NS_ENOMEM;
    if (c.u.perm.broker_name != NULL) {
        rv = ns_propose(req, &c, perm_done, NULL);
        if (rv != 0 && rv != NS_ENOMEM) {
            rv = ns_reply_write_error(&req->to, rv);
        }
    }
    ns_command_close(&c);
    return rv;
}

int ns_handle_wipe_write_perm(struct ns_req *req)
{
    return propose_perm(req, NS_CMD_WIPE_WRITE_PERM);
}

int ns_handle_add_write_perm(struct ns_req *req)
{
    return propose_perm(req, NS_CMD_ADD_WRITE_PERM);
}

int ns_handle_delete_topic(struct ns_req *req)
{
    const char *topic = ns_cmd_ext_find(req->cmd, "topic");
    const char *cluster = ns_cmd_ext_find(req->cmd, "clusterName");
    if (topic == NULL) {
        return ns_reply_simple(&req->to, NS_CODE_SUCCESS,
                               NULL); /* nothing to delete */
    }
    struct ns_command c;
    int rv = NS_ENOMEM;
    ns_command_init(&c, NS_CMD_DELETE_TOPIC);
    c.leader_time_ms = ns_clock_wall_ms();
    c.u.topic_delete.topic = ns_strdup(topic);
    if (cluster != NULL && cluster[0] != '\0') {
        c.u.topic_delete.cluster = ns_strdup(cluster);
        if (c.u.topic_delete.cluster == NULL) {
            goto out;
        }
    }
    if (c.u.topic_delete.topic != NULL) {
        rv = ns_propose_simple(req, &c);
    }
out:
    ns_command_close(&c);
    return rv;
}

/* Fills c's queue data from a TopicRouteData body. 0, NS_EPROTO or NS_ENOMEM.
 */
static int decode_queue_datas(const struct ns_cmd *cmd, struct ns_command *c)
{
    cJSON *root = ns_json_parse((const char *)cmd->body, cmd->body_len);
    if (root == NULL) {
        return NS_EPROTO;
    }
    int rv = 0;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "queueDatas");
    int n = cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : 0;
    if (n > 0) {
        c->u.topic_register.qds =
            ns_calloc((size_t)n, sizeof *c->u.topic_register.qds);
        if (c->u.topic_register.qds == NULL) {
            rv = NS_ENOMEM;
            goto out;
        }
    }
    const cJSON *qd;
    cJSON_ArrayForEach(qd, arr)
    {
        struct ns_queue_data *q =
            &c->u.topic_register.qds[c->u.topic_register.n];
        const char *name = ns_json_get_string(qd, "brokerName");
        q->broker_name = ns_strdup(name != NULL ? name : "");
        if (q->broker_name == NULL) {
            rv = NS_ENOMEM;
            goto out;
        }
        q->perm = (int32_t)ns_json_get_int64(qd, "perm", 6);
        q->read_queues = (int32_t)ns_json_get_int64(qd, "readQueueNums", 0);
        q->write_queues = (int32_t)ns_json_get_int64(qd, "writeQueueNums", 0);
        q->sys_flag = (int32_t)ns_json_get_int64(qd, "topicSysFlag", 0);
        c->u.topic_register.n++;
    }
out:
    cJSON_Delete(root);
    return rv;
}

int ns_handle_register_topic(struct ns_req *req)
{
    const char *topic = ns_cmd_ext_find(req->cmd, "topic");
    if (topic == NULL || req->cmd->body_len == 0) {
        return ns_reply_simple(&req->to, NS_CODE_SUCCESS, NULL);
    }
    struct ns_command c;
    ns_command_init(&c, NS_CMD_REGISTER_TOPIC);
    c.leader_time_ms = ns_clock_wall_ms();
    int rv = decode_queue_datas(req->cmd, &c);
    if (rv == NS_EPROTO) {
        rv = ns_reply_simple(&req->to, NS_CODE_SYSTEM_ERROR,
                             "register topic: body is not a TopicRouteData");
        goto out;
    }
    if (rv != 0) {
        goto out;
    }
    if (c.u.topic_register.n == 0) {
        rv = ns_reply_simple(&req->to, NS_CODE_SUCCESS,
                             NULL); /* ignored: no queueDatas */
        goto out;
    }
    c.u.topic_register.topic = ns_strdup(topic);
    rv = c.u.topic_register.topic == NULL ? NS_ENOMEM
                                          : ns_propose_simple(req, &c);
out:
    ns_command_close(&c);
    return rv;
}
