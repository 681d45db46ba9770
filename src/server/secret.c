/* Cluster secret files and policy (raftns/secret.h). It reads and writes only
 * the files it is told about; it does not decide which secret a node uses
 * (src/main.c does). */
#include "raftns/secret.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "raftns/alloc.h"
#include "raftns/err.h"

/* Values shipped in cluster-configs/ and its README: known to everyone. */
static const char *const placeholders[] = {
    "change-me-local-secret",
    "REPLACE-with-a-long-random-string",
    "a long random string",
};

int ns_secret_check(const char *secret, char *why, size_t whylen)
{
    size_t len = strlen(secret);
    if (len == 0) {
        ns_errf(why, whylen, "the cluster secret is empty");
        return NS_EINVAL;
    }
    for (size_t i = 0; i < sizeof placeholders / sizeof placeholders[0]; i++) {
        if (strcmp(secret, placeholders[i]) == 0) {
            ns_errf(why, whylen,
                    "the cluster secret is the placeholder \"%s\" shipped "
                    "with raftns",
                    secret);
            return NS_EINVAL;
        }
    }
    if (len < NS_SECRET_MIN_LEN) {
        ns_errf(why, whylen,
                "the cluster secret has %zu bytes; at least %d are needed", len,
                NS_SECRET_MIN_LEN);
        return NS_EINVAL;
    }
    return 0;
}

int ns_secret_read_file(const char *path, char **out, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        ns_errf(err, errlen, "cannot open secret file %s: %s", path,
                strerror(errno));
        return NS_EIO;
    }
    int rv = NS_EIO;
    struct stat st;
    char *text = ns_malloc(NS_SECRET_FILE_MAX + 2);
    if (text == NULL) {
        rv = NS_ENOMEM;
        goto out;
    }
    size_t len = 0;
    while (len <= NS_SECRET_FILE_MAX) {
        ssize_t got = read(fd, text + len, NS_SECRET_FILE_MAX + 1 - len);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got < 0) {
            ns_errf(err, errlen, "cannot read %s: %s", path, strerror(errno));
            goto out;
        }
        if (got == 0) {
            break;
        }
        len += (size_t)got;
    }
    rv = NS_EPROTO;
    if (len > NS_SECRET_FILE_MAX) {
        ns_errf(err, errlen, "secret file %s is larger than %d bytes", path,
                NS_SECRET_FILE_MAX);
        goto out;
    }
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r')) {
        len--;
    }
    text[len] = '\0';
    if (strlen(text) != len) {
        ns_errf(err, errlen, "secret file %s contains a NUL byte", path);
        goto out;
    }
    ns_errf(err, errlen, "%s", "");
    if (fstat(fd, &st) == 0 && (st.st_mode & 077) != 0) {
        ns_errf(err, errlen,
                "secret file %s may be read by others (mode %03o): chmod 600",
                path, (unsigned)(st.st_mode & 0777));
    }
    *out = text;
    text = NULL;
    rv = 0;
out:
    ns_free(text);
    close(fd);
    return rv;
}

static int make_dirs(const char *path, char *err, size_t errlen)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) {
        ns_errf(err, errlen, "data dir path too long");
        return NS_EIO;
    }
    for (char *p = tmp + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(tmp, 0700) != 0 && errno != EEXIST) {
                ns_errf(err, errlen, "cannot create %s: %s", tmp,
                        strerror(errno));
                return NS_EIO;
            }
            *p = c;
            if (c == '\0') {
                return 0;
            }
        }
    }
}

static int create_secret(const char *path, char *err, size_t errlen)
{
    uint8_t raw[32];
    char hex[2 * sizeof raw + 2];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
        ns_errf(err, errlen, "no random bytes: %s", strerror(errno));
        return NS_EIO;
    }
    for (size_t i = 0; i < sizeof raw; i++) {
        snprintf(hex + 2 * i, 3, "%02x", raw[i]);
    }
    strcat(hex, "\n");
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        /* EEXIST: another start won the race; its file is read next */
        if (errno == EEXIST) {
            return 0;
        }
        ns_errf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        return NS_EIO;
    }
    size_t len = strlen(hex);
    int rv = write(fd, hex, len) == (ssize_t)len && fsync(fd) == 0 ? 0 : NS_EIO;
    if (rv != 0) {
        ns_errf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        unlink(path);
    }
    close(fd);
    return rv;
}

int ns_secret_load_or_create(const char *dir, char **out, int *created,
                             char *err, size_t errlen)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, NS_SECRET_DATA_FILE) >=
        (int)sizeof path) {
        ns_errf(err, errlen, "data dir path too long");
        return NS_EIO;
    }
    *created = 0;
    int rv = make_dirs(dir, err, errlen);
    if (rv == 0 && access(path, F_OK) != 0) {
        rv = create_secret(path, err, errlen);
        *created = rv == 0;
    }
    return rv != 0 ? rv : ns_secret_read_file(path, out, err, errlen);
}
