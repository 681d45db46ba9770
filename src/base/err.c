/* Text for the NS_E* codes of err.h, and formatting a reason into a caller's
 * buffer; nothing else. */
#include "raftns/err.h"

#include <stdarg.h>
#include <stdio.h>

const char *ns_strerror(int rv)
{
    switch (rv) {
    case 0:
        return "success";
#define NS_ERR_CASE(name, value, text)                                         \
    case name:                                                                 \
        return text;
        NS_ERR_TABLE(NS_ERR_CASE)
#undef NS_ERR_CASE
    default:
        return "unknown error";
    }
}

void ns_errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (err == NULL || errlen == 0) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}
