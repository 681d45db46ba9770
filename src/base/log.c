/* The log sink: one line per event, text or a JSON object, on stderr or on the
 * stream main hands it (--log-file). Called only from the server and main
 * layers; it opens no file itself (src/main_log.c does). */
#include "raftns/log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "raftns/err.h"

enum ns_log_level ns_log_threshold = NS_LOG_INFO;
static unsigned long long log_node_id;
static FILE *log_out; /* borrowed; NULL = stderr */
static bool log_json;

void ns_log_set_output(FILE *out, bool json)
{
    log_out = out;
    log_json = json;
}

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

/* msg as the body of a JSON string: quotes, backslashes and control bytes
 * escaped; other bytes (UTF-8) as they are. */
static void json_escape(char *out, size_t cap, const char *msg)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)msg;
         *p != '\0' && n + 7 < cap; p++) {
        if (*p == '"' || *p == '\\') {
            out[n++] = '\\';
            out[n++] = (char)*p;
        } else if (*p < 0x20) {
            n += (size_t)snprintf(out + n, cap - n, "\\u%04x", *p);
        } else {
            out[n++] = (char)*p;
        }
    }
    out[n] = '\0';
}

void ns_log_write(enum ns_log_level level, const char *fmt, ...)
{
    struct timespec ts;
    struct tm tm;
    char when[32];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);

    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    FILE *out = log_out != NULL ? log_out : stderr;
    /* one fprintf per line: a line-buffered stream writes it in one go */
    if (log_json) {
        char esc[4096];
        json_escape(esc, sizeof esc, msg);
        fprintf(out,
                "{\"time\":\"%s.%03ldZ\",\"node\":%llu,\"level\":\"%s\","
                "\"msg\":\"%s\"}\n",
                when, ts.tv_nsec / 1000000, log_node_id, level_name(level),
                esc);
    } else {
        fprintf(out, "%s.%03ldZ node=%llu %s %s\n", when, ts.tv_nsec / 1000000,
                log_node_id, level_name(level), msg);
    }
}
