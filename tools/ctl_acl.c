/* raftnsctl acl add|remove|list: the private ACL codes (NS_CODE_ACL_UPDATE,
 * NS_CODE_ACL_LIST) with the cluster secret; signed like every request when
 * --access-key/--secret-key are given. It never prints a secret key. */
#include <stdio.h>
#include <string.h>

#include <cJSON.h>

#include "raftns/codes.h"
#include "raftns/remoting.h"

#include "ctl.h"

static const char usage[] = "usage: acl add ACCESS_KEY SECRET_KEY ROLE "
                            "[--networks CIDR,...] | acl remove ACCESS_KEY | "
                            "acl list";

static int print_accounts(const struct ctl *ctl, const struct reply *rep)
{
    cJSON *doc =
        cJSON_ParseWithLength((const char *)rep->cmd.body, rep->cmd.body_len);
    if (doc == NULL) {
        fprintf(stderr, "raftnsctl: the reply has no readable JSON body\n");
        return EXIT_SERVER;
    }
    if (ctl->json) {
        char *text = cJSON_Print(doc);
        if (text != NULL) {
            printf("%s\n", text);
            cJSON_free(text);
        }
        cJSON_Delete(doc);
        return 0;
    }
    printf("%-32s %-7s %s\n", "ACCESS_KEY", "ROLE", "NETWORKS");
    const cJSON *a;
    cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(doc, "accounts"))
    {
        const cJSON *ak = cJSON_GetObjectItemCaseSensitive(a, "accessKey");
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(a, "role");
        printf("%-32s %-7s ", cJSON_IsString(ak) ? ak->valuestring : "?",
               cJSON_IsString(role) ? role->valuestring : "?");
        const cJSON *net;
        int n = 0;
        cJSON_ArrayForEach(net, cJSON_GetObjectItemCaseSensitive(a, "networks"))
        {
            printf("%s%s", n++ ? "," : "",
                   cJSON_IsString(net) ? net->valuestring : "?");
        }
        printf("%s\n", n == 0 ? "any" : "");
    }
    cJSON_Delete(doc);
    return 0;
}

static int acl_add(struct ctl *ctl)
{
    const char *networks = NULL;
    if (ctl->n_args == 7 && strcmp(ctl->args[5], "--networks") == 0) {
        networks = ctl->args[6];
    } else if (ctl->n_args != 5) {
        return ns_ctl_usage_error(usage, NULL);
    }
    const char *ext[] = {NS_EXT_ACL_OP,
                         "add",
                         NS_EXT_ACL_ACCESS_KEY,
                         ctl->args[2],
                         NS_EXT_ACL_SECRET_KEY,
                         ctl->args[3],
                         NS_EXT_ACL_ROLE,
                         ctl->args[4],
                         networks ? NS_EXT_ACL_NETWORKS : NULL,
                         networks,
                         NULL};
    struct reply rep;
    int rv = ns_ctl_call(ctl, NS_CODE_ACL_UPDATE, ext, NULL, 0, &rep);
    if (rv == 0) {
        printf("ok\n");
        ns_ctl_reply_close(&rep);
    }
    return rv;
}

int ns_ctl_cmd_acl(struct ctl *ctl)
{
    const char *sub = ctl->n_args >= 2 ? ctl->args[1] : "";
    struct reply rep;
    int rv;
    if (strcmp(sub, "add") == 0) {
        return acl_add(ctl);
    }
    if (strcmp(sub, "remove") == 0 && ctl->n_args == 3) {
        const char *ext[] = {NS_EXT_ACL_OP, "remove", NS_EXT_ACL_ACCESS_KEY,
                             ctl->args[2], NULL};
        rv = ns_ctl_call(ctl, NS_CODE_ACL_UPDATE, ext, NULL, 0, &rep);
        if (rv == 0) {
            printf("ok\n");
            ns_ctl_reply_close(&rep);
        }
        return rv;
    }
    if (strcmp(sub, "list") == 0 && ctl->n_args == 2) {
        rv = ns_ctl_call(ctl, NS_CODE_ACL_LIST, NULL, NULL, 0, &rep);
        if (rv == 0) {
            rv = print_accounts(ctl, &rep);
            ns_ctl_reply_close(&rep);
        }
        return rv;
    }
    return ns_ctl_usage_error(usage, NULL);
}
