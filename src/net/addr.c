/* ns_addr_parse_ipv4 (addr.h). No name resolution, on purpose. */
#include "net/addr.h"

#include <stdlib.h>
#include <string.h>

#include "raftns/err.h"

int ns_addr_parse_ipv4(const char *text, struct sockaddr_in *sa)
{
    char host[64];
    const char *colon = strrchr(text, ':');
    if (colon == NULL || (size_t)(colon - text) >= sizeof host) {
        return NS_EINVAL;
    }
    memcpy(host, text, (size_t)(colon - text));
    host[colon - text] = '\0';
    char *end = NULL;
    long port = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || *end != '\0' || port < 0 || port > 65535) {
        return NS_EINVAL;
    }
    return uv_ip4_addr(host, (int)port, sa) == 0 ? 0 : NS_EINVAL;
}
