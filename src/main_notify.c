/* sd_notify over a datagram socket (main_notify.h). The socket is opened per
 * message: raftns sends a handful in its life (READY, STATUS, STOPPING). */
#include "main_notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "raftns/err.h"
#include "raftns/log.h"

int ns_main_notify(const char *text)
{
    const char *path = getenv("NOTIFY_SOCKET");
    if (path == NULL || path[0] == '\0') {
        return 0;
    }
    struct sockaddr_un sa;
    size_t len = strlen(path);
    if ((path[0] != '/' && path[0] != '@') || len >= sizeof sa.sun_path) {
        NS_LOG(NS_LOG_WARN, "notify: NOTIFY_SOCKET %s is not a socket path",
               path);
        return NS_EIO;
    }
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, path, len);
    if (path[0] == '@') {
        sa.sun_path[0] = '\0'; /* abstract namespace: no trailing NUL counted */
    }
    socklen_t sa_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
                                   len + (path[0] == '/' ? 1 : 0));
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        NS_LOG(NS_LOG_WARN, "notify: socket: %s", strerror(errno));
        return NS_EIO;
    }
    ssize_t n = sendto(fd, text, strlen(text), MSG_NOSIGNAL,
                       (const struct sockaddr *)&sa, sa_len);
    int err = errno;
    close(fd);
    if (n < 0) {
        NS_LOG(NS_LOG_WARN, "notify: sending to %s: %s", path, strerror(err));
        return NS_EIO;
    }
    return 0;
}
