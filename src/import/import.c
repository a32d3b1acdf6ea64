/*
 * The importers' table, and reading the files they import: bounded reads of files and standard
 * input, gzip with a bound on what it decompresses to, UTF-16 text as Windows writes it, format
 * recognition, and the session that merges several files into one snapshot.
 */
#include "import/import-impl.h"
#include "util/strutil.h"
#include "util/xalloc.h"
#include "watch/recording.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define HEAD_BYTES (64u << 10) /* read first: enough to recognise any format */
#define NUL_MESSAGE                                                                                \
    "a NUL byte: neither a snapshot nor a recording, nor text gpudoctor imports (text, or "        \
    "gzip-compressed text)"

/*
 * The formats, in the order auto-detection runs them. The bug report holds the others, so it is
 * imported alone when recognised; any other text runs every importer that recognises something
 * in it (a paste that holds nvidia-smi's table and a dmesg excerpt gives both).
 */
static const struct importer *const importers[] = {
    &importer_bug_report, &importer_smi_table, &importer_smi_query,
    &importer_smi_xml,    &importer_topo,      &importer_nvlink,
    &importer_lspci,      &importer_klog,      &importer_ipmi_sel,
};

static const char *const snapshot_summary =
    "a gpudoctor snapshot, a 'watch --record' recording or a 'check --json' report";

size_t import_n_formats(void)
{
    return ARRAY_SIZE(importers) + 2;
}

const char *import_format_name(size_t i)
{
    if (i == 0)
        return "auto";
    if (i == 1)
        return "snapshot";
    return i - 2 < ARRAY_SIZE(importers) ? importers[i - 2]->name : NULL;
}

const char *import_format_summary(size_t i)
{
    if (i == 0)
        return "recognise each file by its content (the default)";
    if (i == 1)
        return snapshot_summary;
    return i - 2 < ARRAY_SIZE(importers) ? importers[i - 2]->summary : NULL;
}

bool import_format_known(const char *name)
{
    for (size_t i = 0; i < import_n_formats(); i++) {
        if (strcmp(import_format_name(i), name) == 0)
            return true;
    }
    return false;
}

const char *import_format_names(void)
{
    static char names[256];

    if (names[0] == '\0') {
        size_t len = 0;

        for (size_t i = 0; i < import_n_formats() && len < sizeof(names); i++)
            len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s", i ? ", " : "",
                                    import_format_name(i));
    }
    return names;
}

static const struct importer *importer_named(const char *name)
{
    for (size_t i = 0; i < ARRAY_SIZE(importers); i++) {
        if (strcmp(importers[i]->name, name) == 0)
            return importers[i];
    }
    return NULL;
}

/* ---- the session ---- */

struct import_session *import_begin(struct snapshot *base)
{
    struct import_session *is = xcalloc(1, sizeof(*is));

    /*
     * Syslog stamps are local times (mktime for each line). Without TZ, glibc stats
     * /etc/localtime on every call: half the time of a large kernel log. Naming the same zone
     * once makes it read once; the zone is unchanged.
     */
    if (getenv("TZ") == NULL)
        setenv("TZ", ":/etc/localtime", 0);
    is->s = base ? base : snapshot_new();
    if (base == NULL) {
        struct nvml_system *n = &is->s->nvml;

        is->s->gpudoctor_version = xstrdup(GPUDOCTOR_VERSION);
        /* Nothing asked NVML yet: every return code "not attempted" until a piece says. */
        n->init_rc = n->driver_version_rc = n->nvml_version_rc = JF_RC_NOT_COLLECTED;
        n->cuda_driver_version_rc = n->device_count_rc = JF_RC_NOT_COLLECTED;
    }
    return is;
}

static void imp_release(struct imp *im)
{
    free(im->error);
}

static void run_one(struct imp *im, const struct importer *r, const char *text, size_t len)
{
    im->format = r->name;
    im->found = false;
    r->run(im, text, len);
}

void imp_run_part(struct imp *parent, const struct importer *r, const char *text, size_t len,
                  unsigned long line0, bool list_complete)
{
    struct imp im;

    memset(&im, 0, sizeof(im));
    im.is = parent->is;
    im.s = parent->s;
    im.name = parent->name;
    im.line0 = line0;
    im.klog_now_ms = parent->klog_now_ms;
    im.list_complete = list_complete;
    run_one(&im, r, text, len);
    /* A section that does not read is said, not fatal: the rest of the report still counts. */
    if (im.error != NULL)
        imp_note(parent, COLLECTOR_NVML, 0, "%s", im.error);
    imp_release(&im);
}

static bool blank_text(const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (text[i] != ' ' && text[i] != '\t' && text[i] != '\n' && text[i] != '\r')
            return false;
    }
    return true;
}

int import_text(struct import_session *is, const char *format, const char *text, size_t len,
                const char *name, char **cause)
{
    const struct importer *forced = NULL;
    struct imp im;
    bool any = false;
    const char *nul = memchr(text, '\0', len);

    if (nul != NULL) {
        struct lines l;
        unsigned long line = 1;
        size_t col = (size_t)(nul - text) + 1;

        lines_init(&l, text, (size_t)(nul - text));
        while (lines_next(&l)) {
            line = l.no;
            col = (size_t)(nul - text) - l.start + 1;
        }
        *cause = xasprintf("%s:%lu:%zu: " NUL_MESSAGE, name, line, col);
        return -1;
    }
    if (format != NULL && strcmp(format, "auto") != 0) {
        forced = importer_named(format);
        if (forced == NULL) {
            *cause =
                xasprintf("%s: --format %s: not a format of text gpudoctor imports", name, format);
            return -1;
        }
    }
    if (blank_text(text, len)) {
        *cause = xasprintf("%s: empty: nothing to import", name);
        return -1;
    }
    memset(&im, 0, sizeof(im));
    im.is = is;
    im.s = is->s;
    im.name = name;
    is->pieces++;
    if (forced != NULL) {
        run_one(&im, forced, text, len);
        any = im.found;
    } else if (importer_bug_report.detect(text, len)) {
        run_one(&im, &importer_bug_report, text, len);
        any = im.found;
    } else {
        for (size_t i = 0; i < ARRAY_SIZE(importers) && im.error == NULL; i++) {
            if (importers[i] == &importer_bug_report || !importers[i]->detect(text, len))
                continue;
            run_one(&im, importers[i], text, len);
            any |= im.found;
        }
        if (!any && im.error == NULL)
            imp_fail(&im, 0,
                     "not a format gpudoctor reads: expected nvidia-smi output (its table, -L, "
                     "-q, -q -x, topo -m, nvlink -s or -e), lspci -vv, a kernel log (dmesg, "
                     "journalctl -k, kern.log), an nvidia-bug-report.log(.gz), the BMC's event "
                     "log (ipmitool sel elist), or a gpudoctor snapshot; --format names one (%s)",
                     import_format_names());
    }
    if (im.error == NULL && !any)
        imp_fail(&im, 0, "no %s output found", forced ? forced->name : "known");
    if (im.error != NULL) {
        *cause = im.error;
        im.error = NULL;
        imp_release(&im);
        return -1;
    }
    imp_release(&im);
    return 0;
}

/* ---- reading files ---- */

struct input {
    const char *path;
    int fd;
    unsigned char *buf;
    size_t len, cap;
    bool eof;
};

/* Reads until len reaches want (or the end). Returns 0 or -errno. */
static int read_upto(struct input *in, size_t want)
{
    if (want > in->cap) {
        in->buf = xrealloc(in->buf, want + 1);
        in->cap = want;
    }
    while (!in->eof && in->len < want) {
        ssize_t n = read(in->fd, in->buf + in->len, want - in->len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            in->eof = true;
        in->len += (size_t)n;
    }
    return 0;
}

/* Everything, at most IMPORT_MAX_BYTES. Returns 0, -EFBIG or -errno. */
static int read_all(struct input *in)
{
    while (!in->eof) {
        size_t want = in->cap < (1u << 20) ? (1u << 20) : in->cap * 2;
        int rc;

        if (want > IMPORT_MAX_BYTES + 1)
            want = IMPORT_MAX_BYTES + 1;
        rc = read_upto(in, want);
        if (rc != 0)
            return rc;
        if (in->len > IMPORT_MAX_BYTES)
            return -EFBIG;
    }
    return 0;
}

static bool is_gzip(const unsigned char *b, size_t n)
{
    return n >= 2 && b[0] == 0x1f && b[1] == 0x8b;
}

/*
 * Decompresses gzip data (every member of it, as gzip -d does), stopping at IMPORT_MAX_BYTES of
 * output: a gzip bomb is refused, whatever its compressed size.
 */
static int gunzip(const unsigned char *in, size_t n, char **out, size_t *out_len, const char *path,
                  char **cause)
{
    z_stream z;
    size_t cap = n * 4 < (1u << 20) ? (1u << 20) : n * 4, len = 0;
    char *buf;
    int rc;

    if (cap > IMPORT_MAX_BYTES + 1)
        cap = IMPORT_MAX_BYTES + 1;
    buf = xmalloc(cap + 1);
    memset(&z, 0, sizeof(z));
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
        fatal("zlib: inflateInit2 failed");
    z.next_in = (unsigned char *)in;
    z.avail_in = (uInt)(n > UINT32_MAX ? UINT32_MAX : n);
    for (;;) {
        if (len == cap) {
            if (cap > IMPORT_MAX_BYTES) {
                *cause = xasprintf("%s: larger than " IMPORT_MAX_TEXT " once decompressed (a "
                                   "gzip bomb?): not read",
                                   path);
                goto fail;
            }
            cap = cap * 2 > IMPORT_MAX_BYTES + 1 ? IMPORT_MAX_BYTES + 1 : cap * 2;
            buf = xrealloc(buf, cap + 1);
        }
        z.next_out = (unsigned char *)buf + len;
        z.avail_out = (uInt)(cap - len);
        rc = inflate(&z, Z_NO_FLUSH);
        len = cap - z.avail_out;
        if (rc == Z_STREAM_END) {
            /* Another member may follow (gzip -c a b > c); anything else ends it. */
            if (z.avail_in >= 2 && z.next_in[0] == 0x1f && z.next_in[1] == 0x8b) {
                inflateReset(&z);
                continue;
            }
            break;
        }
        if (rc == Z_OK)
            continue;
        if (rc == Z_BUF_ERROR && z.avail_out > 0) {
            *cause = xasprintf("%s: the gzip data is cut short (after %zu bytes of text): the "
                               "file is incomplete",
                               path, len);
            goto fail;
        }
        if (rc == Z_BUF_ERROR)
            continue;
        *cause = xasprintf("%s: not valid gzip data (%s) after %zu bytes of text", path,
                           z.msg ? z.msg : "corrupt", len);
        goto fail;
    }
    inflateEnd(&z);
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    return 0;
fail:
    inflateEnd(&z);
    free(buf);
    return -1;
}

/*
 * Text Windows wrote as UTF-16 (PowerShell's "nvidia-smi > file"): to UTF-8. Everything
 * nvidia-smi prints is ASCII; other characters become '?'.
 */
static char *from_utf16le(const unsigned char *b, size_t n, size_t *out_len)
{
    char *out = xmalloc(n / 2 + 1);
    size_t k = 0;

    for (size_t i = 2; i + 1 < n; i += 2) {
        unsigned u = b[i] | (unsigned)b[i + 1] << 8;

        out[k++] = u == 0 ? '\0' : u < 0x80 ? (char)u : '?';
    }
    out[k] = '\0';
    *out_len = k;
    return out;
}

static bool json_first(const unsigned char *b, size_t n)
{
    size_t i = 0;

    if (n >= 3 && b[0] == 0xef && b[1] == 0xbb && b[2] == 0xbf)
        i = 3;
    while (i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r'))
        i++;
    return i < n && b[i] == '{';
}

static int open_input(struct input *in, const char *path, char **cause)
{
    memset(in, 0, sizeof(*in));
    in->path = path;
    in->fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (in->fd < 0) {
        *cause = xasprintf("%s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

static void close_input(struct input *in)
{
    if (in->fd >= 0 && in->fd != STDIN_FILENO)
        close(in->fd);
    free(in->buf);
    in->buf = NULL;
}

/*
 * Reads the rest of a file whose head is read, as text: plain, gzip or UTF-16. *text points into
 * *owned, which the caller frees.
 */
static int read_text(struct input *in, char **owned, const char **text, size_t *len, char **cause)
{
    int rc;

    /* A NUL in what was read first ends it at once (/dev/zero would take 256 MiB to refuse). */
    if (!is_gzip(in->buf, in->len) && !(in->len >= 2 && in->buf[0] == 0xff && in->buf[1] == 0xfe)) {
        const unsigned char *nul = memchr(in->buf, '\0', in->len);

        if (nul != NULL) {
            unsigned long line = 1;
            const unsigned char *bol = in->buf;

            for (const unsigned char *p = in->buf; p < nul; p++) {
                if (*p == '\n') {
                    line++;
                    bol = p + 1;
                }
            }
            *cause = xasprintf("%s:%lu:%zu: " NUL_MESSAGE, in->path, line, (size_t)(nul - bol) + 1);
            return -1;
        }
    }
    rc = read_all(in);
    if (rc != 0) {
        *cause = rc == -EFBIG
                     ? xasprintf("%s: larger than " IMPORT_MAX_TEXT ", the most gpudoctor reads",
                                 in->path)
                     : xasprintf("%s: %s", in->path, strerror(-rc));
        return -1;
    }
    if (is_gzip(in->buf, in->len)) {
        if (gunzip(in->buf, in->len, owned, len, in->path, cause) != 0)
            return -1;
        *text = *owned;
    } else if (in->len >= 2 && in->buf[0] == 0xff && in->buf[1] == 0xfe) {
        *owned = from_utf16le(in->buf, in->len, len);
        *text = *owned;
    } else {
        size_t skip =
            in->len >= 3 && in->buf[0] == 0xef && in->buf[1] == 0xbb && in->buf[2] == 0xbf ? 3 : 0;

        in->buf[in->len] = '\0';
        *owned = (char *)in->buf;
        *text = *owned + skip;
        *len = in->len - skip;
        in->buf = NULL; /* the caller's now */
    }
    return 0;
}

/* Auto-detection would read the text as a kernel log and as nothing else. */
static bool kernel_log_only(const char *format, const char *text, size_t len)
{
    if ((format != NULL && strcmp(format, "auto") != 0) || importer_bug_report.detect(text, len))
        return false;
    for (size_t i = 0; i < ARRAY_SIZE(importers); i++) {
        if (importers[i] != &importer_bug_report && importers[i] != &importer_klog &&
            importers[i]->detect(text, len))
            return false;
    }
    return importer_klog.detect(text, len);
}

/* A kernel log kept to be read after the other files. */
struct later {
    char *owned;
    const char *text, *path;
    size_t len;
};

/*
 * Kernel logs are read after the other files. A syslog stamp has no year, and its year is the one
 * that puts it at most a day before the evidence's time, which the other files say (nvidia-smi's
 * header, the bug report's date): read first, a log would take this year's instead, and what it
 * says would depend on the order of --from. They are kept in memory until then, at most
 * IMPORT_MAX_BYTES in all; beyond that a log is read at once.
 */
struct snapshot *import_load(const char *const *paths, size_t n, const char *format, char **cause)
{
    struct import_session *is = NULL;
    bool forced_json = format != NULL && strcmp(format, "snapshot") == 0;
    bool forced_text = format != NULL && !forced_json && strcmp(format, "auto") != 0;
    struct later *later = xcalloc(n ? n : 1, sizeof(*later));
    size_t n_later = 0, later_bytes = 0;
    struct snapshot *s = NULL;

    for (size_t i = 0; i < n; i++) {
        struct input in;
        char *owned = NULL;
        const char *text;
        size_t len;
        int rc;

        if (open_input(&in, paths[i], cause) != 0)
            goto out;
        rc = read_upto(&in, HEAD_BYTES);
        if (rc != 0) {
            *cause = xasprintf("%s: %s", paths[i], strerror(-rc));
            close_input(&in);
            goto out;
        }
        if (forced_json || (!forced_text && json_first(in.buf, in.len))) {
            if (is != NULL || n_later != 0) {
                *cause = xasprintf("%s: a snapshot must be the first --from file: the others "
                                   "add to it",
                                   paths[i]);
                close_input(&in);
                goto out;
            }
            s = recording_load_fd(in.fd, paths[i], (const char *)in.buf, in.len, cause);
            close_input(&in);
            if (s == NULL || n == 1)
                goto out; /* one snapshot is read exactly as before: nothing to merge */
            is = import_begin(s);
            s = NULL;
            continue;
        }
        rc = read_text(&in, &owned, &text, &len, cause);
        close_input(&in);
        if (rc != 0)
            goto out;
        if ((i + 1 < n || n_later > 0) && later_bytes + len <= IMPORT_MAX_BYTES &&
            memchr(text, '\0', len) == NULL && kernel_log_only(format, text, len)) {
            later[n_later++] = (struct later){ owned, text, paths[i], len };
            later_bytes += len;
            continue;
        }
        if (is == NULL)
            is = import_begin(NULL);
        rc = import_text(is, format, text, len, paths[i], cause);
        free(owned);
        if (rc != 0)
            goto out;
    }
    for (size_t i = 0; i < n_later; i++) {
        if (is == NULL)
            is = import_begin(NULL);
        if (import_text(is, format, later[i].text, later[i].len, later[i].path, cause) != 0)
            goto out;
    }
    s = import_end(is);
    is = NULL;
out:
    if (is != NULL)
        snapshot_free(import_end(is));
    for (size_t i = 0; i < n_later; i++)
        free(later[i].owned);
    free(later);
    return s;
}

/* ---- the end of a session ---- */

static int cmp_gpu_index(const void *a, const void *b)
{
    const struct gpu *x = a, *y = b;

    return (x->index > y->index) - (x->index < y->index);
}

static struct pcie_device *pcie_device_at(struct pcie_info *p, const char *nvml_bus)
{
    char addr[32];
    struct pcie_device *d;

    for (size_t i = 0; i < p->n_gpus; i++) {
        if (p->gpus[i].address && driver_pci_same(p->gpus[i].address, nvml_bus))
            return &p->gpus[i];
    }
    /* NVML's "00000000:3B:00.0" as sysfs writes it: "0000:3b:00.0". */
    snprintf(addr, sizeof(addr), "%s", nvml_bus + (strlen(nvml_bus) == 16 ? 4 : 0));
    for (char *c = addr; *c; c++)
        *c = (char)(*c >= 'A' && *c <= 'F' ? *c - 'A' + 'a' : *c);
    p->gpus = xreallocarray(p->gpus, p->n_gpus + 1, sizeof(*p->gpus));
    d = &p->gpus[p->n_gpus++];
    memset(d, 0, sizeof(*d));
    d->address = xstrdup(addr);
    d->vendor_id = 0x10de;
    d->numa_node = -1;
    return d;
}

/* topo -m's NUMA affinity, on the PCIe devices of the GPUs whose address another piece gave. */
static void apply_topology(struct import_session *is)
{
    struct snapshot *s = is->s;

    for (size_t i = 0; i < is->n_topo_gpus; i++) {
        const struct topo_gpu *t = &is->topo_gpus[i];
        struct gpu *g = snapshot_gpu(s, (uint32_t)t->gpu);
        struct pcie_device *d;

        if (!t->numa_known || g == NULL || !gpu_valid(g, GPU_S_PCI_BUS_ID))
            continue;
        d = pcie_device_at(&s->pcie, g->pci_bus_id);
        s->pcie.valid |= UINT64_C(1) << PCIE_I_GPUS; /* the list is kept whole (lspci.c) */
        if (!pcie_device_valid(d, PCIE_S_NUMA)) {
            d->numa_node = t->numa;
            d->valid |= UINT64_C(1) << PCIE_S_NUMA;
        }
    }
    for (size_t i = 0; i < is->n_links; i++) {
        free(is->links[i].peer);
        free(is->links[i].link);
    }
    free(is->links);
    free(is->topo_gpus);
}

struct snapshot *import_end(struct import_session *is)
{
    struct snapshot *s = is->s;

    if (s->n_gpus > 1)
        qsort(s->gpus, s->n_gpus, sizeof(*s->gpus), cmp_gpu_index);
    apply_topology(is);
    /*
     * The time the evidence was taken: what a piece says (nvidia-smi's header, the bug report's
     * date), else the last kernel-log stamp (the log was copied after it). Unknown stays 0: ages
     * are then unknown, never counted from the day of the import.
     */
    if (is->time_ms > s->time_ms)
        s->time_ms = is->time_ms;
    else if (s->time_ms == 0)
        s->time_ms = is->klog_last_ms;
    free(is->sel.ev);
    free(is->sel.seen);
    free(is);
    return s;
}
