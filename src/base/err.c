/* Text for the NS_E* codes of err.h; nothing else. */
#include "raftns/err.h"

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
