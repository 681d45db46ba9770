/* RocketMQ ACL signatures, IPv4 networks and the account table
 * (include/raftns/acl.h). It decides whether credentials are right, never
 * which code needs which role (src/gateway/acl_gate.c). Pure. */
#include "raftns/acl.h"

#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/sorted.h"

static const char *const ROLE_NAMES[] = {
    [NS_ACL_ROLE_READER] = "reader",
    [NS_ACL_ROLE_BROKER] = "broker",
    [NS_ACL_ROLE_ADMIN] = "admin",
};

const char *ns_acl_role_name(enum ns_acl_role role)
{
    if (role <= NS_ACL_ROLE_NONE || role > NS_ACL_ROLE_ADMIN) {
        return NULL;
    }
    return ROLE_NAMES[role];
}

int ns_acl_role_parse(const char *text, enum ns_acl_role *out)
{
    for (int r = NS_ACL_ROLE_READER; r <= NS_ACL_ROLE_ADMIN; r++) {
        if (text != NULL && strcmp(text, ROLE_NAMES[r]) == 0) {
            *out = (enum ns_acl_role)r;
            return 0;
        }
    }
    return NS_EINVAL;
}

static const struct {
    const char *text, *label;
} VERDICTS[NS_ACL_N_VERDICTS] = {
    [NS_ACL_OK] = {"ok", "ok"},
    [NS_ACL_NO_ACCESS_KEY] = {"no AccessKey", "no_access_key"},
    [NS_ACL_NO_SIGNATURE] = {"no Signature", "no_signature"},
    [NS_ACL_UNKNOWN_KEY] = {"unknown AccessKey", "unknown_access_key"},
    [NS_ACL_BAD_SIGNATURE] = {"signature mismatch", "signature_mismatch"},
    [NS_ACL_BAD_SOURCE] = {"source address not allowed", "source_address"},
    [NS_ACL_ROLE_TOO_LOW] = {"role too low", "role"},
};

const char *ns_acl_verdict_text(enum ns_acl_verdict v)
{
    return (unsigned)v < NS_ACL_N_VERDICTS ? VERDICTS[v].text : "?";
}

const char *ns_acl_verdict_label(enum ns_acl_verdict v)
{
    return (unsigned)v < NS_ACL_N_VERDICTS ? VERDICTS[v].label : "other";
}

/* --- networks --- */

/* Parses a decimal 0..max of 1-3 digits at *p, advancing it. */
static int parse_small(const char **p, const char *end, unsigned max,
                       unsigned *out)
{
    unsigned v = 0;
    int digits = 0;
    while (*p < end && **p >= '0' && **p <= '9' && digits < 3) {
        v = v * 10 + (unsigned)(**p - '0');
        (*p)++;
        digits++;
    }
    if (digits == 0 || v > max || (*p < end && **p >= '0' && **p <= '9')) {
        return NS_EINVAL;
    }
    *out = v;
    return 0;
}

static int parse_net(const char *p, const char *end, struct ns_acl_net *out)
{
    uint32_t addr = 0;
    unsigned part, prefix = 32;
    for (int i = 0; i < 4; i++) {
        if (parse_small(&p, end, 255, &part) != 0) {
            return NS_EINVAL;
        }
        addr = addr << 8 | part;
        if (i < 3 && (p >= end || *p++ != '.')) {
            return NS_EINVAL;
        }
    }
    if (p < end && *p == '/') {
        p++;
        if (parse_small(&p, end, 32, &prefix) != 0) {
            return NS_EINVAL;
        }
    }
    if (p != end) {
        return NS_EINVAL;
    }
    out->prefix = (uint8_t)prefix;
    out->addr = prefix == 0 ? 0 : addr & (UINT32_MAX << (32 - prefix));
    return 0;
}

int ns_acl_net_parse(const char *text, struct ns_acl_net *out)
{
    return parse_net(text, text + strlen(text), out);
}

int ns_acl_nets_parse(const char *text, struct ns_acl_net **out, size_t *n,
                      const char **bad)
{
    struct ns_acl_net nets[NS_ACL_MAX_NETS];
    size_t count = 0;
    const char *p = text;
    *out = NULL;
    *n = 0;
    while (*p != '\0') {
        while (*p == ' ' || *p == ',') {
            p++;
        }
        if (*p == '\0') {
            break;
        }
        const char *start = p;
        while (*p != '\0' && *p != ',' && *p != ' ') {
            p++;
        }
        if (count == NS_ACL_MAX_NETS ||
            parse_net(start, p, &nets[count]) != 0) {
            if (bad != NULL) {
                *bad = start;
            }
            return NS_EINVAL;
        }
        count++;
    }
    if (count == 0) {
        return 0;
    }
    *out = ns_malloc(count * sizeof nets[0]);
    if (*out == NULL) {
        return NS_ENOMEM;
    }
    memcpy(*out, nets, count * sizeof nets[0]);
    *n = count;
    return 0;
}

bool ns_acl_net_contains(const struct ns_acl_net *net, uint32_t ip)
{
    if (net->prefix == 0) {
        return true;
    }
    uint32_t mask = UINT32_MAX << (32 - net->prefix);
    return (ip & mask) == net->addr;
}

bool ns_acl_nets_allow(const struct ns_acl_net *nets, size_t n, uint32_t ip,
                       bool empty_allows)
{
    if (n == 0) {
        return empty_allows;
    }
    for (size_t i = 0; i < n; i++) {
        if (ns_acl_net_contains(&nets[i], ip)) {
            return true;
        }
    }
    return false;
}

void ns_acl_net_format(const struct ns_acl_net *net, char *out, size_t len)
{
    snprintf(out, len, "%u.%u.%u.%u/%u", net->addr >> 24,
             (net->addr >> 16) & 0xFF, (net->addr >> 8) & 0xFF,
             net->addr & 0xFF, (unsigned)net->prefix);
}

/* --- signature --- */

/* Next UTF-16 code unit of the UTF-8 text at *p (a supplementary character
 * yields its two surrogates in turn: *pending holds the low one). Malformed
 * bytes count as themselves, which keeps the order total. */
static unsigned next_unit(const unsigned char **p, unsigned *pending)
{
    if (*pending != 0) {
        unsigned u = *pending;
        *pending = 0;
        return u;
    }
    const unsigned char *s = *p;
    unsigned c = s[0], cp;
    int extra;
    if (c < 0x80) {
        (*p)++;
        return c;
    } else if ((c & 0xE0) == 0xC0) {
        cp = c & 0x1F, extra = 1;
    } else if ((c & 0xF0) == 0xE0) {
        cp = c & 0x0F, extra = 2;
    } else if ((c & 0xF8) == 0xF0) {
        cp = c & 0x07, extra = 3;
    } else {
        (*p)++;
        return c;
    }
    for (int i = 1; i <= extra; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            (*p)++;
            return c;
        }
        cp = cp << 6 | (s[i] & 0x3F);
    }
    *p += extra + 1;
    if (cp < 0x10000) {
        return cp;
    }
    cp -= 0x10000;
    *pending = 0xDC00 + (cp & 0x3FF);
    return 0xD800 + (cp >> 10);
}

/* Java String.compareTo (UTF-16 code units) on UTF-8 keys. */
static int compare_utf16(const char *a, const char *b)
{
    const unsigned char *pa = (const unsigned char *)a;
    const unsigned char *pb = (const unsigned char *)b;
    unsigned ha = 0, hb = 0;
    for (;;) {
        bool ea = *pa == '\0' && ha == 0, eb = *pb == '\0' && hb == 0;
        if (ea || eb) {
            return ea && eb ? 0 : ea ? -1 : 1;
        }
        unsigned ua = next_unit(&pa, &ha), ub = next_unit(&pb, &hb);
        if (ua != ub) {
            return ua < ub ? -1 : 1;
        }
    }
}

static int compare_ext(const void *x, const void *y)
{
    const struct ns_ext *a = *(const struct ns_ext *const *)x;
    const struct ns_ext *b = *(const struct ns_ext *const *)y;
    return compare_utf16(a->key, b->key);
}

static bool is_signed_field(const struct ns_ext *e, bool skip_unique_key)
{
    if (strcmp(e->key, NS_ACL_EXT_SIGNATURE) == 0) {
        return false;
    }
    return !(skip_unique_key &&
             strcmp(e->key, NS_ACL_EXT_UNIQUE_KEY_QUERY) == 0);
}

int ns_acl_sign(const struct ns_cmd *cmd, const char *secret,
                bool skip_unique_key, char out[NS_ACL_SIG_LEN + 1])
{
    int rv = NS_ENOMEM;
    const struct ns_ext **order =
        ns_malloc((cmd->n_ext ? cmd->n_ext : 1) * sizeof *order);
    if (order == NULL) {
        return NS_ENOMEM;
    }
    size_t n = 0;
    for (size_t i = 0; i < cmd->n_ext; i++) {
        if (is_signed_field(&cmd->ext[i], skip_unique_key)) {
            order[n++] = &cmd->ext[i];
        }
    }
    /* A TreeMap keeps one entry per key; duplicates never leave the decoder,
     * so a plain sort gives the same sequence. */
    qsort(order, n, sizeof *order, compare_ext);
    rv = NS_EIO;
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *ctx = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    if (ctx == NULL) {
        goto err_after_mac;
    }
    char digest_name[] = "SHA1";
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name, 0),
        OSSL_PARAM_construct_end(),
    };
    if (EVP_MAC_init(ctx, (const unsigned char *)secret, strlen(secret),
                     params) != 1) {
        goto err_after_mac;
    }
    for (size_t i = 0; i < n; i++) {
        if (EVP_MAC_update(ctx, (const unsigned char *)order[i]->value,
                           strlen(order[i]->value)) != 1) {
            goto err_after_mac;
        }
    }
    if (cmd->body_len > 0 &&
        EVP_MAC_update(ctx, cmd->body, cmd->body_len) != 1) {
        goto err_after_mac;
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    size_t md_len = 0;
    if (EVP_MAC_final(ctx, md, &md_len, sizeof md) != 1 || md_len != 20) {
        goto err_after_mac;
    }
    unsigned char b64[NS_ACL_SIG_LEN + 1];
    if (EVP_EncodeBlock(b64, md, (int)md_len) != NS_ACL_SIG_LEN) {
        goto err_after_mac;
    }
    memcpy(out, b64, NS_ACL_SIG_LEN + 1);
    rv = 0;
err_after_mac:
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
    ns_free(order);
    return rv;
}

static bool same_signature(const char *got, const char *want)
{
    size_t len = strlen(got);
    return len == NS_ACL_SIG_LEN && CRYPTO_memcmp(got, want, len) == 0;
}

int ns_acl_verify(const struct ns_acl *acl, const struct ns_cmd *cmd,
                  uint32_t ip, const struct ns_acl_account **who,
                  enum ns_acl_verdict *verdict)
{
    const char *ak = ns_cmd_ext_find(cmd, NS_ACL_EXT_ACCESS_KEY);
    const char *sig = ns_cmd_ext_find(cmd, NS_ACL_EXT_SIGNATURE);
    if (who != NULL) {
        *who = NULL;
    }
    if (ak == NULL || ak[0] == '\0') {
        *verdict = NS_ACL_NO_ACCESS_KEY;
        return 0;
    }
    if (sig == NULL || sig[0] == '\0') {
        *verdict = NS_ACL_NO_SIGNATURE;
        return 0;
    }
    const struct ns_acl_account *a = ns_acl_find(acl, ak);
    if (a == NULL) {
        *verdict = NS_ACL_UNKNOWN_KEY;
        return 0;
    }
    char want[NS_ACL_SIG_LEN + 1];
    bool old_client = cmd->version <= 399; /* V4_9_3 */
    int rv = ns_acl_sign(cmd, a->secret_key, old_client, want);
    if (rv != 0) {
        return rv;
    }
    bool ok = same_signature(sig, want);
    if (!ok && ns_cmd_ext_find(cmd, NS_ACL_EXT_UNIQUE_KEY_QUERY) != NULL) {
        /* releases disagree on this field; both forms need the secret */
        if ((rv = ns_acl_sign(cmd, a->secret_key, !old_client, want)) != 0) {
            return rv;
        }
        ok = same_signature(sig, want);
    }
    if (!ok) {
        *verdict = NS_ACL_BAD_SIGNATURE;
    } else if (!ns_acl_nets_allow(a->nets, a->n_nets, ip, true)) {
        *verdict = NS_ACL_BAD_SOURCE;
    } else {
        *verdict = NS_ACL_OK;
        if (who != NULL) {
            *who = a;
        }
    }
    return 0;
}

/* --- the account table --- */

void ns_acl_init(struct ns_acl *acl)
{
    memset(acl, 0, sizeof *acl);
}

void ns_acl_account_close(struct ns_acl_account *a)
{
    ns_free(a->access_key);
    if (a->secret_key != NULL) {
        OPENSSL_cleanse(a->secret_key, strlen(a->secret_key));
    }
    ns_free(a->secret_key);
    ns_free(a->nets);
    memset(a, 0, sizeof *a);
}

void ns_acl_close(struct ns_acl *acl)
{
    for (size_t i = 0; i < acl->n; i++) {
        ns_acl_account_close(&acl->items[i]);
    }
    ns_free(acl->items);
    memset(acl, 0, sizeof *acl);
}

int ns_acl_account_copy(struct ns_acl_account *dst,
                        const struct ns_acl_account *src)
{
    memset(dst, 0, sizeof *dst);
    dst->role = src->role;
    dst->access_key = ns_strdup(src->access_key);
    dst->secret_key = ns_strdup(src->secret_key);
    if (src->n_nets > 0) {
        dst->nets = ns_malloc(src->n_nets * sizeof *dst->nets);
        if (dst->nets != NULL) {
            memcpy(dst->nets, src->nets, src->n_nets * sizeof *dst->nets);
            dst->n_nets = src->n_nets;
        }
    }
    if (dst->access_key == NULL || dst->secret_key == NULL ||
        (src->n_nets > 0 && dst->nets == NULL)) {
        ns_acl_account_close(dst);
        return NS_ENOMEM;
    }
    return 0;
}

static bool is_printable_key(const char *s)
{
    size_t len = s != NULL ? strlen(s) : 0;
    if (len == 0 || len > NS_ACL_MAX_KEY) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        if ((unsigned char)s[i] < 0x21 || s[i] == 0x7F) {
            return false;
        }
    }
    return true;
}

int ns_acl_account_validate(const struct ns_acl_account *a, const char **why)
{
    if (!is_printable_key(a->access_key)) {
        *why = "access key must be 1-256 printable characters, no spaces";
    } else if (!is_printable_key(a->secret_key)) {
        *why = "secret key must be 1-256 printable characters, no spaces";
    } else if (ns_acl_role_name(a->role) == NULL) {
        *why = "role must be admin, broker or reader";
    } else if (a->n_nets > NS_ACL_MAX_NETS) {
        *why = "at most 64 networks per account";
    } else {
        for (size_t i = 0; i < a->n_nets; i++) {
            if (a->nets[i].prefix > 32) {
                *why = "network prefix above 32";
                return NS_EINVAL;
            }
        }
        return 0;
    }
    return NS_EINVAL;
}

/* Index of access_key (found) or its insertion point. */
static size_t search(const struct ns_acl *acl, const char *key, bool *found)
{
    return ns_sorted_search(acl->items, acl->n, sizeof acl->items[0],
                            offsetof(struct ns_acl_account, access_key), key,
                            found);
}

const struct ns_acl_account *ns_acl_find(const struct ns_acl *acl,
                                         const char *access_key)
{
    bool found;
    size_t i = search(acl, access_key, &found);
    return found ? &acl->items[i] : NULL;
}

int ns_acl_put(struct ns_acl *acl, const struct ns_acl_account *a)
{
    struct ns_acl_account copy;
    if (ns_acl_account_copy(&copy, a) != 0) {
        return NS_ENOMEM;
    }
    bool found;
    size_t i = search(acl, a->access_key, &found);
    if (found) {
        ns_acl_account_close(&acl->items[i]);
        acl->items[i] = copy;
        return 0;
    }
    struct ns_acl_account *arr =
        ns_realloc(acl->items, (acl->n + 1) * sizeof *arr);
    if (arr == NULL) {
        ns_acl_account_close(&copy);
        return NS_ENOMEM;
    }
    acl->items = arr;
    memmove(&arr[i + 1], &arr[i], (acl->n - i) * sizeof *arr);
    arr[i] = copy;
    acl->n++;
    return 0;
}

int ns_acl_remove(struct ns_acl *acl, const char *access_key)
{
    bool found;
    size_t i = search(acl, access_key, &found);
    if (found) {
        ns_acl_account_close(&acl->items[i]);
        memmove(&acl->items[i], &acl->items[i + 1],
                (acl->n - i - 1) * sizeof *acl->items);
        acl->n--;
    }
    return 0;
}

/* --- encoding --- */

void ns_acl_encode_account(const struct ns_acl_account *a, struct ns_buf *out)
{
    ns_buf_put_str(out, a->access_key);
    ns_buf_put_str(out, a->secret_key);
    ns_buf_put_u8(out, (uint8_t)a->role);
    ns_buf_put_u32(out, (uint32_t)a->n_nets);
    for (size_t i = 0; i < a->n_nets; i++) {
        ns_buf_put_u32(out, a->nets[i].addr);
        ns_buf_put_u8(out, a->nets[i].prefix);
    }
}

int ns_acl_decode_account(struct ns_rd *in, struct ns_acl_account *a)
{
    memset(a, 0, sizeof *a);
    int rv = ns_rd_str(in, &a->access_key);
    if (rv == 0) {
        rv = ns_rd_str(in, &a->secret_key);
    }
    if (rv != 0) {
        goto err;
    }
    uint8_t role = ns_rd_u8(in);
    uint32_t n = ns_rd_u32(in);
    rv = NS_EPROTO;
    if (in->err || a->access_key == NULL || a->secret_key == NULL ||
        ns_acl_role_name((enum ns_acl_role)role) == NULL ||
        n > NS_ACL_MAX_NETS || n > ns_rd_left(in) / 5) {
        goto err;
    }
    a->role = (enum ns_acl_role)role;
    if (n > 0) {
        if ((a->nets = ns_malloc(n * sizeof *a->nets)) == NULL) {
            rv = NS_ENOMEM;
            goto err;
        }
        for (; a->n_nets < n; a->n_nets++) {
            a->nets[a->n_nets].addr = ns_rd_u32(in);
            a->nets[a->n_nets].prefix = ns_rd_u8(in);
            if (a->nets[a->n_nets].prefix > 32) {
                goto err;
            }
        }
    }
    if (in->err == 0) {
        return 0;
    }
err:
    ns_acl_account_close(a);
    return rv;
}

int ns_acl_encode_state(const struct ns_acl *acl, struct ns_buf *out)
{
    ns_buf_put_u8(out, acl->seeded ? 1 : 0);
    ns_buf_put_u32(out, (uint32_t)acl->n);
    for (size_t i = 0; i < acl->n; i++) {
        ns_acl_encode_account(&acl->items[i], out);
    }
    return out->err;
}

int ns_acl_decode_state(struct ns_acl *acl, struct ns_rd *in)
{
    uint8_t seeded = ns_rd_u8(in);
    uint32_t n = ns_rd_u32(in);
    /* an account is at least 13 bytes */
    if (in->err || seeded > 1 || n > NS_ACL_MAX_ACCOUNTS ||
        n > ns_rd_left(in) / 13) {
        return NS_EPROTO;
    }
    acl->seeded = seeded == 1;
    acl->items = ns_calloc(n ? n : 1, sizeof *acl->items);
    if (acl->items == NULL) {
        return NS_ENOMEM;
    }
    for (; acl->n < n; acl->n++) {
        struct ns_acl_account *a = &acl->items[acl->n];
        int rv = ns_acl_decode_account(in, a);
        if (rv == 0 && acl->n > 0 &&
            strcmp(acl->items[acl->n - 1].access_key, a->access_key) >= 0) {
            ns_acl_account_close(a);
            rv = NS_EPROTO;
        }
        if (rv != 0) {
            return rv; /* the filled part is closed by ns_acl_close */
        }
    }
    return 0;
}
