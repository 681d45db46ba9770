/* raftnsctl's counterparts of mqadmin's name-server commands: `wipe-write-perm
 * BROKER` (205), `add-write-perm BROKER` (327), `delete-topic TOPIC [--cluster
 * C]` (216), and `brokers`: every broker of GET_BROKER_CLUSTER_INFO (106) with
 * the last heartbeat each member heard from it and its timeout
 * (BROKER_LIVENESS, codes.h). It sends the stock codes as mqadmin does and
 * changes nothing itself; `kv` is in raftnsctl.c. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "raftns/alloc.h"
#include "raftns/codes.h"
#include "raftns/json.h"

#include "ctl.h"

static int print_doc(cJSON *doc)
{
    char *text = doc != NULL ? cJSON_Print(doc) : NULL;
    cJSON_Delete(doc);
    if (text == NULL) {
        fprintf(stderr, "raftnsctl: out of memory\n");
        return EXIT_SERVER;
    }
    printf("%s\n", text);
    cJSON_free(text);
    return 0;
}

int ns_ctl_cmd_write_perm(struct ctl *ctl)
{
    bool wipe = strcmp(ctl->args[0], "wipe-write-perm") == 0;
    if (ctl->n_args != 2) {
        return ns_ctl_usage_error(wipe ? "usage: wipe-write-perm BROKER"
                                       : "usage: add-write-perm BROKER",
                                  NULL);
    }
    const char *count_key = wipe ? "wipeTopicCount" : "addTopicCount";
    const char *ext[] = {"brokerName", ctl->args[1], NULL};
    struct reply r;
    int rv = ns_ctl_call(ctl,
                         wipe ? NS_CODE_WIPE_WRITE_PERM_OF_BROKER
                              : NS_CODE_ADD_WRITE_PERM_OF_BROKER,
                         ext, NULL, 0, &r);
    if (rv != 0) {
        return rv;
    }
    int64_t count = 0;
    ns_cmd_ext_int64(&r.cmd, count_key, &count);
    ns_ctl_reply_close(&r);
    if (ctl->json) {
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, "brokerName", ctl->args[1]);
        cJSON_AddNumberToObject(doc, count_key, (double)count);
        return print_doc(doc);
    }
    printf("%s write permission of %" PRId64 " topic(s) of %s\n",
           wipe ? "wiped" : "added", count, ctl->args[1]);
    return 0;
}

int ns_ctl_cmd_delete_topic(struct ctl *ctl)
{
    const char *topic = NULL, *cluster = NULL;
    for (size_t i = 1; i < ctl->n_args; i++) {
        if (strcmp(ctl->args[i], "--cluster") == 0 && i + 1 < ctl->n_args) {
            cluster = ctl->args[++i];
        } else if (topic == NULL && ctl->args[i][0] != '-') {
            topic = ctl->args[i];
        } else {
            return ns_ctl_usage_error("usage: delete-topic TOPIC [--cluster C]",
                                      ctl->args[i]);
        }
    }
    if (topic == NULL) {
        return ns_ctl_usage_error("usage: delete-topic TOPIC [--cluster C]",
                                  NULL);
    }
    const char *ext[] = {"topic", topic, cluster ? "clusterName" : NULL,
                         cluster, NULL};
    struct reply r;
    int rv =
        ns_ctl_call(ctl, NS_CODE_DELETE_TOPIC_IN_NAMESRV, ext, NULL, 0, &r);
    if (rv != 0) {
        return rv;
    }
    ns_ctl_reply_close(&r);
    if (ctl->json) {
        cJSON *doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, "topic", topic);
        if (cluster != NULL) {
            cJSON_AddStringToObject(doc, "clusterName", cluster);
        }
        cJSON_AddBoolToObject(doc, "deleted", true);
        return print_doc(doc);
    }
    printf("deleted topic %s%s%s from the name server\n", topic,
           cluster ? " in cluster " : "", cluster ? cluster : "");
    return 0;
}

/* --- brokers --- */

struct node_live {
    char addr[64]; /* client address asked */
    int64_t id;    /* from the reply, 0 when it did not answer */
    cJSON *doc;    /* owned BROKER_LIVENESS body, or NULL */
};

/* The client addresses of every member (member list through ctl), or the -n
 * addresses when the member list cannot be read. */
static size_t node_addrs(const struct ctl *ctl, struct node_live *out,
                         size_t cap)
{
    size_t n = 0;
    struct reply r;
    const char *ext[] = {NULL};
    if (ns_ctl_call(ctl, NS_CODE_MEMBER_LIST, ext, NULL, 0, &r) == 0) {
        cJSON *doc =
            cJSON_ParseWithLength((const char *)r.cmd.body, r.cmd.body_len);
        const cJSON *m;
        cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(doc, "members"))
        {
            const char *client = ns_json_get_string(m, "client");
            if (client != NULL && client[0] != '\0' && n < cap) {
                snprintf(out[n].addr, sizeof out[n].addr, "%s", client);
                n++;
            }
        }
        cJSON_Delete(doc);
        ns_ctl_reply_close(&r);
    }
    if (n == 0) {
        for (; n < ctl->n_addrs && n < cap; n++) {
            snprintf(out[n].addr, sizeof out[n].addr, "%s", ctl->addrs[n]);
        }
    }
    return n;
}

static void ask_liveness(const struct ctl *ctl, struct node_live *nl)
{
    struct ctl one = *ctl;
    one.addrs[0] = nl->addr;
    one.n_addrs = 1;
    struct reply r;
    if (ns_ctl_call(&one, NS_CODE_BROKER_LIVENESS, NULL, NULL, 0, &r) != 0) {
        return;
    }
    nl->doc = cJSON_ParseWithLength((const char *)r.cmd.body, r.cmd.body_len);
    nl->id = ns_json_get_int64(nl->doc, "node", 0);
    ns_ctl_reply_close(&r);
}

static const cJSON *find_live(const cJSON *doc, const char *cluster,
                              const char *addr)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "brokers"))
    {
        const char *c = ns_json_get_string(e, "cluster");
        const char *a = ns_json_get_string(e, "brokerAddr");
        if (c != NULL && a != NULL && strcmp(c, cluster) == 0 &&
            strcmp(a, addr) == 0) {
            return e;
        }
    }
    return NULL;
}

struct broker_row {
    const char *cluster, *name, *addr; /* borrowed from the 106 tree */
    int64_t id;
};

static int compare_rows(const void *pa, const void *pb)
{
    const struct broker_row *a = pa, *b = pb;
    int d = strcmp(a->cluster, b->cluster);
    if (d == 0) {
        d = strcmp(a->name, b->name);
    }
    if (d == 0) {
        d = a->id < b->id ? -1 : a->id > b->id;
    }
    return d;
}

/* Every (cluster, broker name, id, address) of a 106 body; *out owned. */
static size_t broker_rows(const cJSON *info, struct broker_row **out)
{
    size_t n = 0, cap = 16;
    struct broker_row *rows = ns_calloc(cap, sizeof *rows);
    const cJSON *bd;
    cJSON_ArrayForEach(
        bd, cJSON_GetObjectItemCaseSensitive(info, "brokerAddrTable"))
    {
        const char *cluster = ns_json_get_string(bd, "cluster");
        const char *name = ns_json_get_string(bd, "brokerName");
        const cJSON *a;
        cJSON_ArrayForEach(a,
                           cJSON_GetObjectItemCaseSensitive(bd, "brokerAddrs"))
        {
            if (rows == NULL || !cJSON_IsString(a)) {
                continue;
            }
            if (n == cap) {
                struct broker_row *more =
                    ns_realloc(rows, 2 * cap * sizeof *rows);
                if (more == NULL) {
                    continue;
                }
                rows = more;
                cap *= 2;
            }
            rows[n].cluster = cluster ? cluster : "";
            rows[n].name = name ? name : bd->string;
            rows[n].addr = a->valuestring;
            rows[n].id = strtoll(a->string, NULL, 10);
            n++;
        }
    }
    qsort(rows, n, sizeof *rows, compare_rows);
    *out = rows;
    return n;
}

static cJSON *brokers_json(const struct broker_row *rows, size_t n_rows,
                           const struct node_live *nodes, size_t n_nodes)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(doc, "brokers");
    for (size_t i = 0; i < n_rows; i++) {
        const struct broker_row *r = &rows[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "cluster", r->cluster);
        cJSON_AddStringToObject(o, "brokerName", r->name);
        cJSON_AddNumberToObject(o, "brokerId", (double)r->id);
        cJSON_AddStringToObject(o, "brokerAddr", r->addr);
        int64_t timeout = -1;
        cJSON *hb = cJSON_AddArrayToObject(o, "lastHeartbeat");
        for (size_t k = 0; k < n_nodes; k++) {
            const cJSON *e = find_live(nodes[k].doc, r->cluster, r->addr);
            cJSON *h = cJSON_CreateObject();
            cJSON_AddNumberToObject(h, "node", (double)nodes[k].id);
            cJSON_AddStringToObject(h, "address", nodes[k].addr);
            if (nodes[k].doc == NULL) {
                cJSON_AddStringToObject(h, "error", "unreachable");
            } else if (e == NULL) {
                cJSON_AddNullToObject(h, "agoMs");
            } else {
                /* agoMs: since the node itself heard the broker (null:
                 * never); seenAgoMs: since any node did, as it knows (the
                 * leader's merges every node's reports) */
                int64_t ago = ns_json_get_int64(e, "lastHeartbeatAgoMs", -1);
                if (ago < 0) {
                    cJSON_AddNullToObject(h, "agoMs");
                } else {
                    cJSON_AddNumberToObject(h, "agoMs", (double)ago);
                }
                cJSON_AddNumberToObject(
                    h, "seenAgoMs",
                    (double)ns_json_get_int64(e, "seenAgoMs", 0));
                cJSON_AddBoolToObject(
                    h, "leader",
                    ns_json_get_bool(nodes[k].doc, "leader", false));
                timeout = ns_json_get_int64(e, "timeoutMs", timeout);
            }
            cJSON_AddItemToArray(hb, h);
        }
        if (timeout >= 0) {
            cJSON_AddNumberToObject(o, "timeoutMs", (double)timeout);
        } else {
            cJSON_AddNullToObject(o, "timeoutMs");
        }
        cJSON_AddItemToArray(arr, o);
    }
    return doc;
}

static void print_brokers(const cJSON *doc)
{
    printf("%-12s %-16s %-3s %-21s %-10s %s\n", "CLUSTER", "BROKER", "ID",
           "ADDRESS", "TIMEOUT_MS",
           "LAST HEARTBEAT (ms ago, heard by each node; - never)");
    const cJSON *o;
    cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(doc, "brokers"))
    {
        char timeout[24] = "-";
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "timeoutMs");
        if (cJSON_IsNumber(t)) {
            snprintf(timeout, sizeof timeout, "%.0f", t->valuedouble);
        }
        printf("%-12s %-16s %-3" PRId64 " %-21s %-10s",
               ns_json_get_string(o, "cluster"),
               ns_json_get_string(o, "brokerName"),
               ns_json_get_int64(o, "brokerId", 0),
               ns_json_get_string(o, "brokerAddr"), timeout);
        const cJSON *h;
        double merged = -1;
        cJSON_ArrayForEach(h,
                           cJSON_GetObjectItemCaseSensitive(o, "lastHeartbeat"))
        {
            const cJSON *seen =
                cJSON_GetObjectItemCaseSensitive(h, "seenAgoMs");
            if (ns_json_get_bool(h, "leader", false) && cJSON_IsNumber(seen)) {
                merged = seen->valuedouble;
            }
            const cJSON *ago = cJSON_GetObjectItemCaseSensitive(h, "agoMs");
            if (cJSON_IsNumber(ago)) {
                printf(" n%" PRId64 "=%.0f", ns_json_get_int64(h, "node", 0),
                       ago->valuedouble);
            } else {
                printf(" n%" PRId64 "=%s", ns_json_get_int64(h, "node", 0),
                       cJSON_GetObjectItemCaseSensitive(h, "error") ? "?"
                                                                    : "-");
            }
        }
        if (merged >= 0) {
            /* the leader's view merges every member's reports */
            printf("  (leader: any node %.0f)", merged);
        }
        printf("\n");
    }
}

int ns_ctl_cmd_brokers(struct ctl *ctl)
{
    if (ctl->n_args != 1) {
        return ns_ctl_usage_error("usage: brokers", NULL);
    }
    struct reply r;
    int rv =
        ns_ctl_call(ctl, NS_CODE_GET_BROKER_CLUSTER_INFO, NULL, NULL, 0, &r);
    if (rv != 0) {
        return rv;
    }
    cJSON *info = ns_json_parse((const char *)r.cmd.body, r.cmd.body_len);
    ns_ctl_reply_close(&r);
    if (info == NULL) {
        fprintf(stderr, "raftnsctl: the reply has no readable JSON body\n");
        return EXIT_SERVER;
    }
    struct node_live *nodes = ns_calloc(MAX_ADDRS, sizeof *nodes);
    struct broker_row *rows = NULL;
    size_t n_rows = broker_rows(info, &rows);
    size_t n_nodes = nodes != NULL ? node_addrs(ctl, nodes, MAX_ADDRS) : 0;
    size_t n_ok = 0;
    for (size_t i = 0; i < n_nodes; i++) {
        ask_liveness(ctl, &nodes[i]);
        n_ok += nodes[i].doc != NULL;
    }
    cJSON *doc = brokers_json(rows, n_rows, nodes, n_nodes);
    if (ctl->json) {
        rv = print_doc(doc);
    } else {
        print_brokers(doc);
        cJSON_Delete(doc);
    }
    if (rv == 0 && n_ok < n_nodes) {
        rv = EXIT_SERVER; /* the table says which node did not answer */
    }
    for (size_t i = 0; i < n_nodes; i++) {
        cJSON_Delete(nodes[i].doc);
    }
    ns_free(nodes);
    ns_free(rows);
    cJSON_Delete(info);
    return rv;
}
