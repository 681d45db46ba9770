/* The log sink: one line per event on stderr. Called only from the server and
 * main layers. */
#include "raftns/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "raftns/err.h"

enum ns_log_level ns_log_threshold = NS_LOG_INFO;
static unsigned long long log_node_id;

void ns_log_set_node(unsigned long long node_id)
{
    log_node_id = node_id;
}

static const char *level_name(enum ns_log_level level)
{
    static const char *const names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
    return (unsigned)level < 4 ? names[level] : "?";
}

int ns_log_parse_level(const char *name, enum ns_log_level *out)
{
    static const char *const names[] = {"debug", "info", "warn", "error"};
    for (int i = 0; i < 4; i++) {
        if (strcmp(name, names[i]) == 0) {
            *out = (enum ns_log_level)i;
            return 0;
        }
    }
    return NS_EINVAL;
}

void ns_log_write(enum ns_log_level level, const char *fmt, ...)
{
    struct timespec ts;
    struct tm tm;
    char when[32];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);

    char line[2048];
    int n = snprintf(line, sizeof line, "%s.%03ldZ node=%llu %s ", when,
                     ts.tv_nsec / 1000000, log_node_id, level_name(level));
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof line) {
        vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    }
    va_end(ap);
    fprintf(stderr, "%s\n", line);
}
