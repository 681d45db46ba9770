/* Names of the stock RocketMQ codes (raftns/codes.h), for logs and tools. A
 * switch per kind, so two rows of one kind with the same number do not
 * compile. */
#include <stddef.h>

#include "raftns/codes.h"

#define CASE_REQUEST_REQUEST(name, number)                                     \
    case number:                                                               \
        return #name;
#define CASE_REQUEST_RESPONSE(name, number)
#define CASE_RESPONSE_RESPONSE(name, number)                                   \
    case number:                                                               \
        return #name;
#define CASE_RESPONSE_REQUEST(name, number)

const char *ns_code_request_name(int32_t code)
{
#define X(kind, name, number) CASE_REQUEST_##kind(name, number)
    switch (code) {
        NS_CODE_TABLE(X)
    default:
        return NULL;
    }
#undef X
}

const char *ns_code_response_name(int32_t code)
{
#define X(kind, name, number) CASE_RESPONSE_##kind(name, number)
    switch (code) {
        NS_CODE_TABLE(X)
    default:
        return NULL;
    }
#undef X
}
