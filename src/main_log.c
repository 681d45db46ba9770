/* The --log-file stream (main_log.h). Opening by path on every SIGHUP is what
 * logrotate's default (rename, then signal) expects. */
#include "main_log.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "raftns/err.h"
#include "raftns/log.h"

static const char *log_path; /* borrowed from argv */
static bool log_json;
static FILE *log_file; /* owned */

static FILE *open_stream(const char *path)
{
    FILE *f = fopen(path, "ae");
    if (f != NULL) {
        setvbuf(f, NULL, _IOLBF, 0); /* a line is visible when it is logged */
    }
    return f;
}

int ns_main_log_open(const char *path, bool json)
{
    log_path = path;
    log_json = json;
    if (path == NULL) {
        ns_log_set_output(NULL, json);
        return 0;
    }
    log_file = open_stream(path);
    if (log_file == NULL) {
        fprintf(stderr, "raftns: cannot open --log-file %s: %s\n", path,
                strerror(errno));
        return NS_EIO;
    }
    ns_log_set_output(log_file, json);
    return 0;
}

void ns_main_log_reopen(void)
{
    if (log_path == NULL) {
        return;
    }
    FILE *f = open_stream(log_path);
    if (f == NULL) {
        NS_LOG(NS_LOG_ERROR,
               "cannot reopen --log-file %s: %s; still writing "
               "to the old file",
               log_path, strerror(errno));
        return;
    }
    ns_log_set_output(f, log_json);
    fclose(log_file);
    log_file = f;
    NS_LOG(NS_LOG_INFO, "log file %s reopened", log_path);
}

void ns_main_log_close(void)
{
    ns_log_set_output(NULL, log_json);
    if (log_file != NULL) {
        fclose(log_file);
        log_file = NULL;
    }
}
