/* raftnsctl controller ...: mqadmin's controller commands against raftns
 * (docs/controller.md §3). Like mqadmin, every command but config first asks
 * CONTROLLER_GET_METADATA_INFO (1005) for the leader's address and sends the
 * real request there; config goes to each -n address in turn, as the settings
 * are per node. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "raftns/buf.h"
#include "raftns/codes.h"
#include "raftns/remoting.h"

#include "ctl.h"

static const char usage[] =
    "usage: controller metadata | controller sync-state BROKER... | "
    "controller elect BROKER ID [CLUSTER] | controller clean BROKER [IDS] "
    "[--living] | controller config get | controller config set KEY=VALUE...";

static const char *ext_of(const struct reply *r, const char *key)
{
    const char *v = ns_cmd_ext_find(&r->cmd, key);
    return v != NULL ? v : "-";
}

/* A copy of ctl that asks only addr (borrowed). */
static struct ctl at(const struct ctl *ctl, char *addr)
{
    struct ctl one = *ctl;
    one.addrs[0] = addr;
    one.n_addrs = 1;
    return one;
}

/* The leader's controller address from 1005 (owned copy in out). 0, 1 (no
 * leader known: printed) or 3. */
static int find_leader(const struct ctl *ctl, char *out, size_t len)
{
    struct reply r;
    int rv = ns_ctl_call(ctl, NS_CODE_CONTROLLER_GET_METADATA_INFO, NULL, NULL,
                         0, &r);
    if (rv != 0) {
        return rv;
    }
    const char *leader = ns_cmd_ext_find(&r.cmd, "controllerLeaderAddress");
    if (leader == NULL) {
        fprintf(stderr, "raftnsctl: no controller leader known yet\n");
        rv = EXIT_SERVER;
    } else {
        snprintf(out, len, "%s", leader);
    }
    ns_ctl_reply_close(&r);
    return rv;
}

/* Sends code to the leader; 0 with *r (close it), or the exit status. */
static int call_leader(const struct ctl *ctl, int32_t code,
                       const char *const *ext, const uint8_t *body, size_t len,
                       struct reply *r)
{
    char leader[128];
    int rv = find_leader(ctl, leader, sizeof leader);
    if (rv != 0) {
        return rv;
    }
    struct ctl one = at(ctl, leader);
    return ns_ctl_call(&one, code, ext, body, len, r);
}

static int print_ext(const struct ctl *ctl, const struct reply *r,
                     const char *const *keys)
{
    if (ctl->json) {
        cJSON *o = cJSON_CreateObject();
        for (size_t i = 0; o != NULL && i < r->cmd.n_ext; i++) {
            cJSON_AddStringToObject(o, r->cmd.ext[i].key, r->cmd.ext[i].value);
        }
        char *text = o ? cJSON_Print(o) : NULL;
        if (text != NULL) {
            printf("%s\n", text);
        }
        cJSON_free(text);
        cJSON_Delete(o);
        return text != NULL ? 0 : EXIT_SERVER;
    }
    for (size_t i = 0; keys[i] != NULL; i++) {
        printf("%-24s %s\n", keys[i], ext_of(r, keys[i]));
    }
    return 0;
}

static int cmd_metadata(const struct ctl *ctl)
{
    struct reply r;
    int rv = ns_ctl_call(ctl, NS_CODE_CONTROLLER_GET_METADATA_INFO, NULL, NULL,
                         0, &r);
    if (rv == 0) {
        static const char *const keys[] = {"group",
                                           "controllerLeaderId",
                                           "controllerLeaderAddress",
                                           "isLeader",
                                           "peers",
                                           NULL};
        rv = print_ext(ctl, &r, keys);
        ns_ctl_reply_close(&r);
    }
    return rv;
}

static void print_replicas(const cJSON *list, bool in_sync)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, list)
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "brokerId");
        const cJSON *addr =
            cJSON_GetObjectItemCaseSensitive(it, "brokerAddress");
        const cJSON *alive = cJSON_GetObjectItemCaseSensitive(it, "alive");
        printf("  %-6.0f %-24s %-8s %s\n",
               cJSON_IsNumber(id) ? id->valuedouble : -1,
               cJSON_IsString(addr) ? addr->valuestring : "-",
               in_sync ? "in-sync" : "out",
               cJSON_IsTrue(alive) ? "alive" : "dead");
    }
}

static int cmd_sync_state(const struct ctl *ctl)
{
    if (ctl->n_args < 3) {
        return ns_ctl_usage_error(usage, NULL);
    }
    cJSON *names = cJSON_CreateArray();
    for (size_t i = 2; names != NULL && i < ctl->n_args; i++) {
        cJSON_AddItemToArray(names, cJSON_CreateString(ctl->args[i]));
    }
    char *body = names ? cJSON_PrintUnformatted(names) : NULL;
    cJSON_Delete(names);
    if (body == NULL) {
        fprintf(stderr, "raftnsctl: out of memory\n");
        return EXIT_SERVER;
    }
    struct reply r;
    int rv = call_leader(ctl, NS_CODE_CONTROLLER_GET_SYNC_STATE_DATA, NULL,
                         (const uint8_t *)body, strlen(body), &r);
    cJSON_free(body);
    if (rv != 0) {
        return rv;
    }
    cJSON *doc =
        cJSON_ParseWithLength((const char *)r.cmd.body, r.cmd.body_len);
    if (doc == NULL) {
        /* fastjson's bare numeric keys do not occur in this body */
        fprintf(stderr, "raftnsctl: the reply has no readable JSON body\n");
        ns_ctl_reply_close(&r);
        return EXIT_SERVER;
    }
    if (ctl->json) {
        char *text = cJSON_Print(doc);
        if (text != NULL) {
            printf("%s\n", text);
        }
        cJSON_free(text);
    } else {
        const cJSON *g;
        cJSON_ArrayForEach(
            g, cJSON_GetObjectItemCaseSensitive(doc, "replicasInfoTable"))
        {
            const cJSON *m =
                cJSON_GetObjectItemCaseSensitive(g, "masterBrokerId");
            const cJSON *e = cJSON_GetObjectItemCaseSensitive(g, "masterEpoch");
            const cJSON *s =
                cJSON_GetObjectItemCaseSensitive(g, "syncStateSetEpoch");
            char master[32] = "none";
            if (cJSON_IsNumber(m)) {
                snprintf(master, sizeof master, "%.0f", m->valuedouble);
            }
            printf("%s master %s epoch %.0f syncStateSetEpoch %.0f\n",
                   g->string, master, cJSON_IsNumber(e) ? e->valuedouble : 0,
                   cJSON_IsNumber(s) ? s->valuedouble : 0);
            print_replicas(
                cJSON_GetObjectItemCaseSensitive(g, "inSyncReplicas"), true);
            print_replicas(
                cJSON_GetObjectItemCaseSensitive(g, "notInSyncReplicas"),
                false);
        }
    }
    cJSON_Delete(doc);
    ns_ctl_reply_close(&r);
    return 0;
}

static int cmd_elect(const struct ctl *ctl)
{
    if (ctl->n_args != 4 && ctl->n_args != 5) {
        return ns_ctl_usage_error(usage, NULL);
    }
    const char *cluster = ctl->n_args == 5 ? ctl->args[4] : "";
    struct reply r;
    int rv = call_leader(ctl, NS_CODE_CONTROLLER_ELECT_MASTER,
                         (const char *const[]){"clusterName", cluster,
                                               "brokerName", ctl->args[2],
                                               "brokerId", ctl->args[3],
                                               "designateElect", "true", NULL},
                         NULL, 0, &r);
    if (rv == 0) {
        static const char *const keys[] = {"masterBrokerId", "masterAddress",
                                           "masterEpoch", "syncStateSetEpoch",
                                           NULL};
        rv = print_ext(ctl, &r, keys);
        ns_ctl_reply_close(&r);
    }
    return rv;
}

static int cmd_clean(const struct ctl *ctl)
{
    bool living = false;
    const char *ids = NULL;
    for (size_t i = 3; i < ctl->n_args; i++) {
        if (strcmp(ctl->args[i], "--living") == 0) {
            living = true;
        } else if (ids == NULL) {
            ids = ctl->args[i];
        } else {
            return ns_ctl_usage_error(usage, ctl->args[i]);
        }
    }
    if (ctl->n_args < 3) {
        return ns_ctl_usage_error(usage, NULL);
    }
    const char *ext[9] = {"brokerName", ctl->args[2], "isCleanLivingBroker",
                          living ? "true" : "false", NULL};
    if (ids != NULL) {
        ext[4] = "brokerControllerIdsToClean";
        ext[5] = ids;
        ext[6] = NULL;
    }
    struct reply r;
    int rv = call_leader(ctl, NS_CODE_CLEAN_BROKER_DATA, ext, NULL, 0, &r);
    if (rv == 0) {
        printf("cleaned %s%s%s\n", ctl->args[2], ids ? " ids " : "",
               ids ? ids : "");
        ns_ctl_reply_close(&r);
    }
    return rv;
}

/* config get/set on every -n address: the settings are each node's. */
static int cmd_config(const struct ctl *ctl)
{
    bool get = ctl->n_args == 3 && strcmp(ctl->args[2], "get") == 0;
    bool set = ctl->n_args >= 4 && strcmp(ctl->args[2], "set") == 0;
    if (!get && !set) {
        return ns_ctl_usage_error(usage, NULL);
    }
    struct ns_buf body;
    ns_buf_init(&body);
    for (size_t i = 3; set && i < ctl->n_args; i++) {
        if (strchr(ctl->args[i], '=') == NULL) {
            ns_buf_close(&body);
            return ns_ctl_usage_error("config set needs KEY=VALUE",
                                      ctl->args[i]);
        }
        ns_buf_printf(&body, "%s\n", ctl->args[i]);
    }
    int worst = 0;
    for (size_t a = 0; a < ctl->n_addrs; a++) {
        struct ctl one = at(ctl, ctl->addrs[a]);
        struct reply r;
        int rv = ns_ctl_call(&one,
                             get ? NS_CODE_GET_CONTROLLER_CONFIG
                                 : NS_CODE_UPDATE_CONTROLLER_CONFIG,
                             NULL, body.data, body.len, &r);
        if (rv == 0) {
            if (ctl->n_addrs > 1) {
                printf("# %s\n", ctl->addrs[a]);
            }
            if (get) {
                fwrite(r.cmd.body, 1, r.cmd.body_len, stdout);
            } else {
                printf("updated %s\n", ctl->addrs[a]);
            }
            ns_ctl_reply_close(&r);
        }
        worst = rv > worst ? rv : worst;
    }
    ns_buf_close(&body);
    return worst;
}

int ns_ctl_cmd_controller(struct ctl *ctl)
{
    const char *verb = ctl->n_args >= 2 ? ctl->args[1] : "";
    if (strcmp(verb, "metadata") == 0 && ctl->n_args == 2) {
        return cmd_metadata(ctl);
    }
    if (strcmp(verb, "sync-state") == 0) {
        return cmd_sync_state(ctl);
    }
    if (strcmp(verb, "elect") == 0) {
        return cmd_elect(ctl);
    }
    if (strcmp(verb, "clean") == 0) {
        return cmd_clean(ctl);
    }
    if (strcmp(verb, "config") == 0) {
        return cmd_config(ctl);
    }
    return ns_ctl_usage_error(usage, verb[0] ? verb : NULL);
}
