/* LanguageCode names and ordinals (docs/protocol.md §2.2). A lookup table only.
 */
#include "raftns/remoting.h"

#include <string.h>

#include "raftns/decimal.h"

static const char *const names[NS_LANG_COUNT] = {
    "JAVA",  "CPP",  "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY",
    "OTHER", "HTTP", "GO",     "PHP",    "OMS",    "RUST",   "NODE_JS",
};

const char *ns_language_name(int32_t language)
{
    if (language < 0 || language >= NS_LANG_COUNT) {
        return "OTHER";
    }
    return names[language];
}

int32_t ns_language_parse(const char *text)
{
    if (text[0] >= '0' && text[0] <= '9') {
        int64_t v;
        return ns_decimal_parse(text, strlen(text), 0, 0, NS_LANG_COUNT - 1, &v)
                   ? (int32_t)v
                   : -1;
    }
    for (int32_t i = 0; i < NS_LANG_COUNT; i++) {
        if (strcmp(names[i], text) == 0) {
            return i;
        }
    }
    return -1;
}
