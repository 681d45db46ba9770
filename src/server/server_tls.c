/* The TLS start-up settings of a server (raftns/server.h): the keys in raftns's
 * and Java's spellings and what they accept. It loads nothing (conn_tls.c
 * builds the contexts). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "raftns/err.h"
#include "raftns/server.h"

/* raftns's spelling first: it wins when both are given. */
static const char *const KEYS[][2] = {
    {"tlsMode", "tls.server.mode"},
    {"tlsServerCertPath", "tls.server.certPath"},
    {"tlsServerKeyPath", "tls.server.keyPath"},
    {"tlsServerTrustCertPath", "tls.server.trustCertPath"},
    {"tlsServerNeedClientAuth", "tls.server.need.client.auth"},
    {"httpTls", "httpTls"},
    {"raftTls", "raftTls"}, /* read here, used by the node's transport */
};
enum { K_MODE, K_CERT, K_KEY, K_TRUST, K_AUTH, K_HTTP, K_RAFT, N_KEYS };

bool ns_server_tls_is_key(const char *key)
{
    for (size_t i = 0; i < N_KEYS; i++) {
        if (strcmp(key, KEYS[i][0]) == 0 || strcmp(key, KEYS[i][1]) == 0) {
            return true;
        }
    }
    return false;
}

/* The value of setting k (borrowed), the key it came from in *from, or NULL. */
static const char *lookup(const struct ns_props *props, size_t k,
                          const char **from)
{
    for (int spelling = 0; spelling < 2; spelling++) {
        for (size_t i = 0; i < props->n; i++) {
            if (strcmp(props->items[i].key, KEYS[k][spelling]) == 0) {
                *from = KEYS[k][spelling];
                return props->items[i].value;
            }
        }
    }
    return NULL;
}

int ns_server_tls_parse(const struct ns_props *props, struct ns_server_tls *out,
                        char *err, size_t errlen)
{
    const char *from = NULL;
    memset(out, 0, sizeof *out);
    out->cert_path = lookup(props, K_CERT, &from);
    out->key_path = lookup(props, K_KEY, &from);
    out->trust_path = lookup(props, K_TRUST, &from);
    const char *mode = lookup(props, K_MODE, &from);
    out->mode = out->cert_path != NULL && out->cert_path[0] != '\0'
                    ? NS_TLS_MODE_PERMISSIVE
                    : NS_TLS_MODE_DISABLED;
    if (mode != NULL && strcasecmp(mode, "disabled") == 0) {
        out->mode = NS_TLS_MODE_DISABLED;
    } else if (mode != NULL && strcasecmp(mode, "permissive") == 0) {
        out->mode = NS_TLS_MODE_PERMISSIVE;
    } else if (mode != NULL && strcasecmp(mode, "enforcing") == 0) {
        out->mode = NS_TLS_MODE_ENFORCING;
    } else if (mode != NULL) {
        snprintf(err, errlen,
                 "%s is \"%s\": want disabled, permissive or enforcing", from,
                 mode);
        return NS_EINVAL;
    }
    const char *auth = lookup(props, K_AUTH, &from);
    if (auth == NULL || strcasecmp(auth, "none") == 0) {
        out->client_auth = NS_TLS_VERIFY_NONE;
    } else if (strcasecmp(auth, "optional") == 0) {
        out->client_auth = NS_TLS_VERIFY_OPTIONAL;
    } else if (strcasecmp(auth, "require") == 0) {
        out->client_auth = NS_TLS_VERIFY_REQUIRE;
    } else {
        snprintf(err, errlen, "%s is \"%s\": want none, optional or require",
                 from, auth);
        return NS_EINVAL;
    }
    const char *http = lookup(props, K_HTTP, &from);
    if (http != NULL && strcasecmp(http, "true") != 0 &&
        strcasecmp(http, "false") != 0) {
        snprintf(err, errlen, "httpTls is \"%s\": want true or false", http);
        return NS_EINVAL;
    }
    out->http = http != NULL && strcasecmp(http, "true") == 0;
    if (out->http && out->mode == NS_TLS_MODE_DISABLED) {
        snprintf(err, errlen,
                 "httpTls needs tlsServerCertPath and "
                 "tlsServerKeyPath (and tlsMode not disabled)");
        return NS_EINVAL;
    }
    const char *raft = lookup(props, K_RAFT, &from);
    if (raft != NULL && strcasecmp(raft, "enforcing") != 0 &&
        strcasecmp(raft, "disabled") != 0) {
        snprintf(err, errlen, "raftTls is \"%s\": want disabled or enforcing",
                 raft);
        return NS_EINVAL;
    }
    out->raft = raft != NULL && strcasecmp(raft, "enforcing") == 0;
    if (out->raft && (out->cert_path == NULL || out->cert_path[0] == '\0' ||
                      out->key_path == NULL || out->key_path[0] == '\0' ||
                      out->trust_path == NULL || out->trust_path[0] == '\0')) {
        snprintf(err, errlen,
                 "raftTls enforcing needs tlsServerCertPath, tlsServerKeyPath "
                 "and tlsServerTrustCertPath (the CA of the members' "
                 "certificates)");
        return NS_EINVAL;
    }
    if (out->mode != NS_TLS_MODE_DISABLED &&
        (out->cert_path == NULL || out->cert_path[0] == '\0' ||
         out->key_path == NULL || out->key_path[0] == '\0')) {
        snprintf(
            err, errlen, "TLS %s needs tlsServerCertPath and tlsServerKeyPath",
            out->mode == NS_TLS_MODE_ENFORCING ? "enforcing" : "permissive");
        return NS_EINVAL;
    }
    return 0;
}
