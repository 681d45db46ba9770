/* raftns's log file (--log-file): opened at start, reopened on SIGHUP so that
 * logrotate can move it away; the log sink (src/base/log.c) writes to it.
 * It is not a rotator: it never renames or truncates. */
#ifndef RAFTNS_MAIN_LOG_H
#define RAFTNS_MAIN_LOG_H

#include <stdbool.h>

/* Opens path for appending (path borrowed for the process's lifetime; NULL =
 * stay on stderr) and points the sink at it. 0, or NS_EIO with the reason
 * printed on stderr. */
int ns_main_log_open(const char *path, bool json);
/* Opens the path again and swaps the sink over; on failure the old stream is
 * kept and the failure logged to it. */
void ns_main_log_reopen(void);
/* Points the sink back at stderr and closes the file. */
void ns_main_log_close(void);

#endif
