/* Reading a cluster file from disk: the I/O half of the cluster file, over the
 * pure parser in src/route/cluster_config.c. It does not log: the caller
 * prints the reason it returns. */
#include "raftns/cluster_config_load.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/err.h"

int ns_cluster_config_load(const char *path, struct ns_cluster_config *c,
                           char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        ns_errf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return NS_EIO;
    }
    int rv = NS_ENOMEM;
    char *text = ns_malloc(NS_CLUSTER_FILE_MAX + 1);
    if (text == NULL) {
        goto err_after_file;
    }
    size_t len = fread(text, 1, NS_CLUSTER_FILE_MAX + 1, f);
    if (ferror(f)) {
        ns_errf(err, errlen, "cannot read %s", path);
        rv = NS_EIO;
    } else {
        rv = ns_cluster_config_parse(text, len, c, err, errlen);
    }
    ns_free(text);
err_after_file:
    fclose(f);
    return rv;
}
