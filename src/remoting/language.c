/* LanguageCode names and ordinals (docs/protocol.md §2.2). A lookup table only.
 */
#include "raftns/remoting.h"

#include <string.h>

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
        int32_t v = 0;
        for (const char *p = text; *p != '\0'; p++) {
            if (*p < '0' || *p > '9' || v >= NS_LANG_COUNT) {
                return -1;
            }
            v = v * 10 + (*p - '0');
        }
        return v < NS_LANG_COUNT ? v : -1;
    }
    for (int32_t i = 0; i < NS_LANG_COUNT; i++) {
        if (strcmp(names[i], text) == 0) {
            return i;
        }
    }
    return -1;
}
