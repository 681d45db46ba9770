/* libFuzzer driver: arbitrary bytes as a backup file (raftns restore, raftnsctl
 * snapshot inspect). The check must never crash or leak; a file it accepts has
 * a header that re-encodes to the same 40 bytes, and a body that decodes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "raftns/backup.h"
#include "raftns/err.h"
#include "raftns/fsm.h"
#include "raftns/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ns_json_use_ns_alloc();
    struct ns_backup_header h;
    const uint8_t *body = NULL;
    size_t len = 0;
    char err[256];
    err[0] = '\0';
    int rv = ns_backup_file_check(data, size, &h, &body, &len, err, sizeof err);
    if (rv != 0) {
        if (err[0] == '\0') {
            abort(); /* every refusal says why */
        }
        return 0;
    }
    uint8_t again[NS_BACKUP_HEADER_LEN];
    ns_backup_header_encode(h.index, h.term, body, len, again);
    if (body != data + NS_BACKUP_HEADER_LEN ||
        len + NS_BACKUP_HEADER_LEN != size ||
        memcmp(again, data, NS_BACKUP_HEADER_LEN) != 0) {
        abort();
    }
    struct ns_state s;
    if (ns_state_init(&s) != 0 || ns_snapshot_decode(&s, body, len) != 0) {
        abort();
    }
    ns_state_close(&s);
    return 0;
}
