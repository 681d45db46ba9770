/* The checker of include/raftns/wire.h: an incremental state machine over
 * libraft 0.15's uv message stream that lets through only messages whose
 * type, header size, entry count and lengths, configuration blob and payload
 * size are within bounds, so libraft's decoder never sees a crafted length.
 * Pure and allocation-free; it judges no term or index (raft does) and it
 * never buffers a payload, it only counts it. */
#include "raftns/wire.h"

#include <string.h>

#include "raftns/command.h"
#include "raftns/err.h"

/* libraft 0.15 message types (enum raft_io_type) and entry types (enum
 * raft_entry_type); copied as numbers so this pure file needs no raft.h. */
enum {
    T_APPEND_ENTRIES = 1,
    T_APPEND_ENTRIES_RESULT = 2,
    T_REQUEST_VOTE = 3,
    T_REQUEST_VOTE_RESULT = 4,
    T_INSTALL_SNAPSHOT = 5,
    T_TIMEOUT_NOW = 6,
};
enum { E_COMMAND = 1, E_BARRIER = 2, E_CHANGE = 3 };

#define PREAMBLE_SIZE 16
#define AE_FIXED 40 /* term, prev index, prev term, commit, n */
#define AE_TAIL 8   /* sizeofAppendEntries counts a leader id never written */
#define IS_FIXED 40 /* term, last index, last term, conf index, conf len */
#define IS_TAIL 16  /* data length, and 8 bytes counted but never written */
#define CONF_MIN 24 /* format, n, one server with a 1-byte address, padded */
#define CONF_ADDR_MAX 255

/* Violations of a size limit (NS_ETOOBIG); every other reason is NS_EPROTO. */
static const char too_many_entries[] =
    "AppendEntries announces too many entries";
static const char conf_too_long[] = "InstallSnapshot configuration too long";
static const char entry_too_long[] = "entry too long";
static const char ae_too_big[] =
    "AppendEntries payload over the maximum message size";
static const char is_too_big[] =
    "InstallSnapshot data over the maximum message size";

enum conf_field {
    CONF_FORMAT = 0,
    CONF_N,
    CONF_ID,
    CONF_ADDR,
    CONF_ROLE,
    CONF_PAD,
};

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) {
        v = v << 8 | p[i];
    }
    return v;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

void ns_wire_limits_default(struct ns_wire_limits *l)
{
    l->max_payload = 1ull << 30;
    l->max_entries = 1u << 20;
    /* A raftns entry is a u32 length prefix, the command and padding to 8. */
    l->max_entry_len = NS_COMMAND_MAX_SIZE + 16;
    l->max_conf_len = 64u * 1024u;
    l->max_conf_servers = 64;
}

void ns_wire_check_init(struct ns_wire_check *c, const struct ns_wire_limits *l,
                        uint64_t peer_id)
{
    memset(c, 0, sizeof *c);
    c->limits = *l;
    c->peer_id = peer_id;
    c->state = NS_WIRE_CHECK_PREAMBLE;
}

/* Validates the preamble: the type and the header length it announces. */
static const char *on_preamble(struct ns_wire_check *c)
{
    c->type = le64(c->word);
    c->header_len = le64(c->word + 8);
    uint64_t h = c->header_len;
    switch (c->type) {
    case T_APPEND_ENTRIES:
        if (h < AE_FIXED + AE_TAIL || (h - AE_FIXED - AE_TAIL) % 16 != 0) {
            return "AppendEntries header length malformed";
        }
        if ((h - AE_FIXED - AE_TAIL) / 16 > c->limits.max_entries) {
            return too_many_entries;
        }
        return NULL;
    case T_INSTALL_SNAPSHOT:
        if (h < IS_FIXED + IS_TAIL + CONF_MIN ||
            (h - IS_FIXED - IS_TAIL) % 8 != 0) {
            return "InstallSnapshot header length malformed";
        }
        if (h - IS_FIXED - IS_TAIL > c->limits.max_conf_len) {
            return conf_too_long;
        }
        c->conf_len = h - IS_FIXED - IS_TAIL;
        return NULL;
    case T_REQUEST_VOTE:
        return h == 40 ? NULL : "RequestVote header length not 40";
    case T_REQUEST_VOTE_RESULT:
    case T_APPEND_ENTRIES_RESULT:
    case T_TIMEOUT_NOW:
        return h == 24 ? NULL : "result/TimeoutNow header length not 24";
    default:
        return "unknown message type";
    }
}

/* Size of the configuration field starting at c->conf_off, or 0 when it does
 * not fit in what is left of the blob. */
static size_t conf_field_size(const struct ns_wire_check *c)
{
    uint64_t at = c->header_off - IS_FIXED;
    size_t size = 1;
    if (c->conf_field == CONF_N || c->conf_field == CONF_ID) {
        size = 8;
    }
    return at + size <= c->conf_len ? size : 0;
}

/* Size of the header field starting at c->header_off (0: a violation, the
 * field would cross the end of the configuration). */
static size_t field_size(const struct ns_wire_check *c)
{
    uint64_t off = c->header_off;
    switch (c->type) {
    case T_APPEND_ENTRIES:
        if (off >= AE_FIXED && off < c->header_len - AE_TAIL) {
            return 16;
        }
        return 8;
    case T_INSTALL_SNAPSHOT:
        if (off >= IS_FIXED && off < IS_FIXED + c->conf_len) {
            return conf_field_size(c);
        }
        return 8;
    default:
        return 8;
    }
}

static const char *on_conf_field(struct ns_wire_check *c, size_t size)
{
    const uint8_t *w = c->word;
    switch (c->conf_field) {
    case CONF_FORMAT:
        if (w[0] != 1) {
            return "configuration format not 1";
        }
        c->conf_field = CONF_N;
        break;
    case CONF_N:
        c->conf_servers = le64(w);
        if (c->conf_servers == 0 ||
            c->conf_servers > c->limits.max_conf_servers) {
            return "configuration server count out of range";
        }
        c->conf_field = CONF_ID;
        break;
    case CONF_ID:
        if (le64(w) == 0) {
            return "configuration server id 0";
        }
        c->addr_len = 0;
        c->conf_field = CONF_ADDR;
        break;
    case CONF_ADDR:
        if (w[0] == 0) {
            if (c->addr_len == 0) {
                return "configuration address empty";
            }
            c->conf_field = CONF_ROLE;
        } else if (w[0] < 0x21 || w[0] > 0x7e) {
            return "configuration address not printable";
        } else if (++c->addr_len > CONF_ADDR_MAX) {
            return "configuration address too long";
        }
        break;
    case CONF_ROLE:
        if (w[0] > 2) { /* RAFT_STANDBY 0, RAFT_VOTER 1, RAFT_SPARE 2 */
            return "configuration role invalid";
        }
        if (++c->conf_done < c->conf_servers) {
            c->conf_field = CONF_ID;
            break;
        }
        c->conf_field = CONF_PAD;
        /* Encoded size is padded to 8: at most 7 bytes may follow. */
        if (c->conf_len - (c->conf_off + size) >= 8) {
            return "configuration has trailing bytes";
        }
        break;
    default: /* CONF_PAD: libraft does not zero its padding */
        break;
    }
    if (c->conf_off + size == c->conf_len && c->conf_field != CONF_PAD) {
        return "configuration truncated";
    }
    return NULL;
}

static const char *on_entry(struct ns_wire_check *c)
{
    const uint8_t *w = c->word; /* u64 term, u8 type, 3 unused, u32 len */
    uint32_t len = le32(w + 12);
    if (w[8] != E_COMMAND && w[8] != E_BARRIER && w[8] != E_CHANGE) {
        return "entry type invalid";
    }
    if (len == 0 || len % 8 != 0) {
        return "entry length zero or not a multiple of 8";
    }
    if (len > c->limits.max_entry_len) {
        return entry_too_long;
    }
    c->payload_sum += len;
    if (c->payload_sum > c->limits.max_payload) {
        return ae_too_big;
    }
    return NULL;
}

/* Validates the header field that just completed in c->word. */
static const char *on_field(struct ns_wire_check *c, size_t size)
{
    uint64_t off = c->header_off - size; /* where the field started */
    uint64_t v = le64(c->word);
    switch (c->type) {
    case T_APPEND_ENTRIES:
        if (off == 32) {
            c->n_entries = v;
            if (v != (c->header_len - AE_FIXED - AE_TAIL) / 16) {
                return "AppendEntries entry count does not match its header";
            }
        } else if (size == 16) {
            return on_entry(c);
        }
        return NULL;
    case T_REQUEST_VOTE:
        if (off == 8 && v != c->peer_id) {
            return "RequestVote candidate id is not the authenticated peer";
        }
        if (off == 32 && v > 3) { /* disrupt leader, pre-vote */
            return "RequestVote flags invalid";
        }
        return NULL;
    case T_REQUEST_VOTE_RESULT:
        if (off == 16 && v > 1) { /* pre-vote */
            return "RequestVoteResult flags invalid";
        }
        return NULL;
    case T_INSTALL_SNAPSHOT:
        if (off == 32 && v != c->conf_len) {
            return "InstallSnapshot configuration length does not match";
        }
        if (off >= IS_FIXED && off < IS_FIXED + c->conf_len) {
            c->conf_off = off - IS_FIXED;
            return on_conf_field(c, size);
        }
        if (off == IS_FIXED + c->conf_len) {
            if (v == 0) {
                return "InstallSnapshot data length zero";
            }
            if (v > c->limits.max_payload) {
                return is_too_big;
            }
            c->payload_sum = v;
        }
        return NULL;
    default:
        return NULL;
    }
}

static void end_message(struct ns_wire_check *c)
{
    c->n_messages++;
    c->state = NS_WIRE_CHECK_PREAMBLE;
    c->header_off = 0;
    c->payload_sum = 0;
    c->conf_field = CONF_FORMAT;
    c->conf_done = 0;
}

static void end_header(struct ns_wire_check *c)
{
    if (c->type == T_APPEND_ENTRIES || c->type == T_INSTALL_SNAPSHOT) {
        c->payload_left = c->payload_sum;
    } else {
        c->payload_left = 0;
    }
    if (c->payload_left == 0) {
        end_message(c);
    } else {
        c->state = NS_WIRE_CHECK_PAYLOAD;
    }
}

int ns_wire_check_feed(struct ns_wire_check *c, const uint8_t *buf, size_t len,
                       size_t *n_ok)
{
    size_t i = 0;
    const char *why = NULL;
    int rv = NS_EPROTO;
    if (c->state == NS_WIRE_CHECK_FAILED) {
        *n_ok = 0;
        return NS_EPROTO;
    }
    while (i < len) {
        if (c->state == NS_WIRE_CHECK_PAYLOAD) {
            size_t take = len - i;
            if (take > c->payload_left) {
                take = (size_t)c->payload_left;
            }
            i += take;
            c->payload_left -= take;
            if (c->payload_left == 0) {
                end_message(c);
            }
            continue;
        }
        size_t size = PREAMBLE_SIZE;
        if (c->state == NS_WIRE_CHECK_HEADER) {
            size = field_size(c);
            if (size == 0) {
                why = "configuration field crosses its end";
                break;
            }
        }
        size_t take = size - c->word_len;
        if (take > len - i) {
            take = len - i;
        }
        memcpy(c->word + c->word_len, buf + i, take);
        c->word_len += (unsigned)take;
        i += take;
        if (c->word_len < size) {
            continue;
        }
        c->word_len = 0;
        if (c->state == NS_WIRE_CHECK_PREAMBLE) {
            why = on_preamble(c);
            if (why == NULL) {
                c->state = NS_WIRE_CHECK_HEADER;
                c->header_off = 0;
            }
        } else {
            c->header_off += size;
            why = on_field(c, size);
            if (why == NULL && c->header_off == c->header_len) {
                end_header(c);
            }
        }
        if (why != NULL) {
            i--; /* the field's last byte is never forwarded */
            break;
        }
    }
    if (why == NULL) {
        *n_ok = len;
        return 0;
    }
    if (why == too_many_entries || why == conf_too_long ||
        why == entry_too_long || why == ae_too_big || why == is_too_big) {
        rv = NS_ETOOBIG;
    }
    c->state = NS_WIRE_CHECK_FAILED;
    c->reason = why;
    *n_ok = i;
    return rv;
}
