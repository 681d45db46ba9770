/* Logging for the server and main layers (L4/L5) only; pure layers never log.
 * NS_LOG checks the level before formatting. One line per event: time, node id,
 * level, message. */
#ifndef RAFTNS_LOG_H
#define RAFTNS_LOG_H

#include <stdbool.h>
#include <stdio.h>

enum ns_log_level { NS_LOG_DEBUG, NS_LOG_INFO, NS_LOG_WARN, NS_LOG_ERROR };

extern enum ns_log_level ns_log_threshold;

/* Lines go to out (borrowed until the next call; NULL = stderr), as text or,
 * with json, as one {"time","node","level","msg"} object a line. */
void ns_log_set_output(FILE *out, bool json);
/* Sets the node id printed on each line (0 = none). */
void ns_log_set_node(unsigned long long node_id);
void ns_log_write(enum ns_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Parses "debug|info|warn|error"; returns 0 or NS_EINVAL. */
int ns_log_parse_level(const char *name, enum ns_log_level *out);

#define NS_LOG(level, ...)                                                     \
    do {                                                                       \
        if ((level) >= ns_log_threshold) {                                     \
            ns_log_write((level), __VA_ARGS__);                                \
        }                                                                      \
    } while (0)

#endif
