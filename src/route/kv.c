/* KV configuration store (namespace -> key -> value) kept as sorted arrays, so
 * iteration and encodings are deterministic. Pure: no file is read or written
 * here (Java's kvConfig.json is replaced by the replicated state). */
#include "raftns/kv.h"

#include <stddef.h>
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/sorted.h"
#include "raftns/json.h"

#define KV_STATE_VERSION 1

struct kv_entry {
    char *key;   /* owned */
    char *value; /* owned, may be NULL (Java's null value) */
};

struct kv_ns {
    char *name; /* owned */
    struct kv_entry *entries;
    size_t n, cap;
};

struct ns_kv {
    struct kv_ns *nss;
    size_t n, cap;
    size_t n_entries;
    size_t bytes; /* ns_kv_state_bytes */
    uint64_t generation;
};

/* The heap bytes of one entry's strings, with an allocator header each. */
static size_t entry_bytes(const char *key, const char *value)
{
    return strlen(key) + (value != NULL ? strlen(value) : 0) + 32;
}

struct ns_kv *ns_kv_create(void)
{
    return ns_calloc(1, sizeof(struct ns_kv));
}

void ns_kv_destroy(struct ns_kv *kv)
{
    if (kv == NULL) {
        return;
    }
    for (size_t i = 0; i < kv->n; i++) {
        struct kv_ns *n = &kv->nss[i];
        for (size_t j = 0; j < n->n; j++) {
            ns_free(n->entries[j].key);
            ns_free(n->entries[j].value);
        }
        ns_free(n->entries);
        ns_free(n->name);
    }
    ns_free(kv->nss);
    ns_free(kv);
}

/* Index of ns (found = true) or its insertion point. */
static size_t search_ns(const struct ns_kv *kv, const char *ns, bool *found)
{
    return ns_sorted_search(kv->nss, kv->n, sizeof *kv->nss,
                            offsetof(struct kv_ns, name), ns, found);
}

static size_t search_key(const struct kv_ns *n, const char *key, bool *found)
{
    return ns_sorted_search(n->entries, n->n, sizeof *n->entries,
                            offsetof(struct kv_entry, key), key, found);
}

static const struct kv_ns *find_ns(const struct ns_kv *kv, const char *ns)
{
    bool found;
    size_t i = search_ns(kv, ns, &found);
    return found ? &kv->nss[i] : NULL;
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) {
        return 0;
    }
    size_t ncap = *cap ? *cap * 2 : 4;
    while (ncap < need) {
        ncap *= 2;
    }
    void *p = ns_realloc(*arr, ncap * elem);
    if (p == NULL) {
        return NS_ENOMEM;
    }
    *arr = p;
    *cap = ncap;
    return 0;
}

/* The namespace ns, created at its sorted place when absent. NULL on OOM. */
static struct kv_ns *get_or_add_ns(struct ns_kv *kv, const char *ns)
{
    bool found;
    size_t i = search_ns(kv, ns, &found);
    if (found) {
        return &kv->nss[i];
    }
    if (grow((void **)&kv->nss, &kv->cap, kv->n + 1, sizeof *kv->nss) != 0) {
        return NULL;
    }
    char *name = ns_strdup(ns);
    if (name == NULL) {
        return NULL;
    }
    memmove(&kv->nss[i + 1], &kv->nss[i], (kv->n - i) * sizeof *kv->nss);
    memset(&kv->nss[i], 0, sizeof kv->nss[i]);
    kv->nss[i].name = name;
    kv->n++;
    return &kv->nss[i];
}

int ns_kv_put(struct ns_kv *kv, const char *ns, const char *key,
              const char *value)
{
    char *vcopy = NULL;
    if (value != NULL && (vcopy = ns_strdup(value)) == NULL) {
        return NS_ENOMEM;
    }
    struct kv_ns *n = get_or_add_ns(kv, ns);
    if (n == NULL) {
        goto err_after_value;
    }
    bool found;
    size_t i = search_key(n, key, &found);
    if (found) {
        kv->bytes += entry_bytes(key, vcopy);
        kv->bytes -= entry_bytes(key, n->entries[i].value);
        ns_free(n->entries[i].value);
        n->entries[i].value = vcopy;
        kv->generation++;
        return 0;
    }
    if (grow((void **)&n->entries, &n->cap, n->n + 1, sizeof *n->entries) !=
        0) {
        goto err_after_value;
    }
    char *kcopy = ns_strdup(key);
    if (kcopy == NULL) {
        goto err_after_value;
    }
    memmove(&n->entries[i + 1], &n->entries[i],
            (n->n - i) * sizeof *n->entries);
    n->entries[i].key = kcopy;
    n->entries[i].value = vcopy;
    n->n++;
    kv->n_entries++;
    kv->bytes += entry_bytes(kcopy, vcopy);
    kv->generation++;
    return 0;

err_after_value:
    ns_free(vcopy);
    return NS_ENOMEM;
}

int ns_kv_delete(struct ns_kv *kv, const char *ns, const char *key)
{
    bool found;
    size_t ni = search_ns(kv, ns, &found);
    kv->generation++;
    if (!found) {
        return 0;
    }
    struct kv_ns *n = &kv->nss[ni];
    size_t i = search_key(n, key, &found);
    if (!found) {
        return 0;
    }
    kv->bytes -= entry_bytes(n->entries[i].key, n->entries[i].value);
    ns_free(n->entries[i].key);
    ns_free(n->entries[i].value);
    memmove(&n->entries[i], &n->entries[i + 1],
            (n->n - i - 1) * sizeof *n->entries);
    n->n--;
    kv->n_entries--;
    return 0;
}

const char *ns_kv_find(const struct ns_kv *kv, const char *ns, const char *key)
{
    const struct kv_ns *n = find_ns(kv, ns);
    if (n == NULL) {
        return NULL;
    }
    bool found;
    size_t i = search_key(n, key, &found);
    return found ? n->entries[i].value : NULL;
}

bool ns_kv_has_namespace(const struct ns_kv *kv, const char *ns)
{
    return find_ns(kv, ns) != NULL;
}

int ns_kv_encode_namespace(const struct ns_kv *kv, const char *ns,
                           struct ns_buf *out)
{
    const struct kv_ns *n = find_ns(kv, ns);
    if (n == NULL) {
        return NS_ENOTFOUND;
    }
    struct ns_json_writer w;
    ns_json_write_init(&w, out, NS_JSON_LEGACY);
    ns_json_write_obj_begin(&w);
    ns_json_write_key(&w, "table");
    ns_json_write_obj_begin(&w);
    for (size_t i = 0; i < n->n; i++) {
        if (n->entries[i].value != NULL) {
            ns_json_write_key(&w, n->entries[i].key);
            ns_json_write_str(&w, n->entries[i].value);
        }
    }
    ns_json_write_obj_end(&w);
    ns_json_write_obj_end(&w);
    return out->err;
}

uint64_t ns_kv_generation(const struct ns_kv *kv)
{
    return kv->generation;
}

size_t ns_kv_n_entries(const struct ns_kv *kv)
{
    return kv->n_entries;
}

size_t ns_kv_state_bytes(const struct ns_kv *kv)
{
    return kv->bytes;
}

void ns_kv_foreach(const struct ns_kv *kv, ns_kv_entry_cb cb, void *arg)
{
    for (size_t i = 0; i < kv->n; i++) {
        const struct kv_ns *n = &kv->nss[i];
        for (size_t j = 0; j < n->n; j++) {
            cb(arg, n->name, n->entries[j].key, n->entries[j].value);
        }
    }
}

/* Layout: u16 version, u32 n_namespaces, then per namespace: str name, u32
 * n_entries, then per entry: str key, str value (NULL allowed). Sorted, so
 * equal states encode equally. */
int ns_kv_encode_state(const struct ns_kv *kv, struct ns_buf *out)
{
    ns_buf_put_u16(out, KV_STATE_VERSION);
    ns_buf_put_u32(out, (uint32_t)kv->n);
    for (size_t i = 0; i < kv->n; i++) {
        const struct kv_ns *n = &kv->nss[i];
        ns_buf_put_str(out, n->name);
        ns_buf_put_u32(out, (uint32_t)n->n);
        for (size_t j = 0; j < n->n; j++) {
            ns_buf_put_str(out, n->entries[j].key);
            ns_buf_put_str(out, n->entries[j].value);
        }
    }
    return out->err;
}

/* Appends one decoded entry to the last namespace; input order must be strictly
 * sorted. */
static int decode_entries(struct ns_kv *kv, struct kv_ns *n, struct ns_rd *in)
{
    uint32_t count = ns_rd_u32(in);
    if (in->err || count > ns_rd_left(in) / 8) {
        return NS_EPROTO;
    }
    if (count > 0 &&
        grow((void **)&n->entries, &n->cap, count, sizeof *n->entries) != 0) {
        return NS_ENOMEM;
    }
    for (uint32_t j = 0; j < count; j++) {
        char *key = NULL, *value = NULL;
        int rv = ns_rd_str(in, &key);
        if (rv == 0) {
            rv = ns_rd_str(in, &value);
        }
        if (rv == 0 &&
            (key == NULL ||
             (n->n > 0 && strcmp(n->entries[n->n - 1].key, key) >= 0))) {
            rv = NS_EPROTO;
        }
        if (rv != 0) {
            ns_free(key);
            ns_free(value);
            return rv;
        }
        n->entries[n->n].key = key;
        n->entries[n->n].value = value;
        n->n++;
        kv->n_entries++;
        kv->bytes += entry_bytes(key, value);
    }
    return 0;
}

int ns_kv_decode_state(struct ns_kv *kv, struct ns_rd *in)
{
    uint16_t version = ns_rd_u16(in);
    uint32_t count = ns_rd_u32(in);
    if (in->err) {
        return NS_EPROTO;
    }
    if (version != KV_STATE_VERSION) {
        return version > KV_STATE_VERSION ? NS_EVERSION : NS_EPROTO;
    }
    if (kv->n != 0 || count > ns_rd_left(in) / 8) {
        return NS_EPROTO;
    }
    if (count > 0 &&
        grow((void **)&kv->nss, &kv->cap, count, sizeof *kv->nss) != 0) {
        return NS_ENOMEM;
    }
    for (uint32_t i = 0; i < count; i++) {
        char *name = NULL;
        int rv = ns_rd_str(in, &name);
        if (rv == 0 &&
            (name == NULL ||
             (kv->n > 0 && strcmp(kv->nss[kv->n - 1].name, name) >= 0))) {
            rv = NS_EPROTO;
        }
        if (rv != 0) {
            ns_free(name);
            return rv;
        }
        struct kv_ns *n = &kv->nss[kv->n++];
        memset(n, 0, sizeof *n);
        n->name = name;
        rv = decode_entries(kv, n, in);
        if (rv != 0) {
            return rv;
        }
    }
    return 0;
}
