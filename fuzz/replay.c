/*
 * The standalone driver of a fuzz harness: feeds it every file named on the command line (a
 * directory: every file in it, in name order), so the committed corpora run as regression tests
 * under gcc and ctest, without libFuzzer. With --mutate N it also feeds N variants of each file
 * (bytes flipped, set to JSON and line punctuation, cut, repeated or removed), from a fixed seed:
 * a little fuzzing in every test run, reproducible because the seed is the file's contents.
 *   replay [--mutate N] PATH...
 * Exit status: 0 when every input ran; a harness that finds a bug aborts (the test fails).
 */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define REPLAY_MAX_BYTES (4u << 20) /* libFuzzer's default -max_len is far smaller */

int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

struct replay {
    unsigned long mutate;
    unsigned long files, inputs;
};

/* xorshift64*: small, and the same everywhere. */
static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static void run_one(struct replay *r, const uint8_t *data, size_t size)
{
    /* A copy of exactly size bytes, so that ASan sees a read past the end of the input. */
    uint8_t *copy = malloc(size ? size : 1);

    if (copy == NULL)
        abort();
    memcpy(copy, data, size);
    LLVMFuzzerTestOneInput(copy, size);
    free(copy);
    r->inputs++;
}

static const uint8_t specials[] = { 0,   0xff, 0x80, '\n', ' ', '"', '\\', '{', '}', '[',
                                    ']', ':',  ',',  '-',  '0', '9', '.',  '=', '#', '\t' };

/* Variant k of data into buf (room for 2 * size + 16), returning its size. */
static size_t mutate(const uint8_t *data, size_t size, uint64_t *seed, uint8_t *buf)
{
    size_t n = size, pos, len;

    memcpy(buf, data, size);
    for (int edits = 1 + (int)(next_rand(seed) % 4); edits > 0; edits--) {
        pos = n ? (size_t)(next_rand(seed) % n) : 0;
        switch (next_rand(seed) % 6) {
        case 0: /* flip a bit */
            if (n)
                buf[pos] ^= (uint8_t)(1u << (next_rand(seed) % 8));
            break;
        case 1: /* a byte that means something to a parser */
            if (n)
                buf[pos] = specials[next_rand(seed) % sizeof(specials)];
            break;
        case 2: /* cut the end: a truncated read */
            n = pos;
            break;
        case 3: /* remove a chunk */
            len = n - pos ? (size_t)(next_rand(seed) % (n - pos)) % 64 : 0;
            memmove(buf + pos, buf + pos + len, n - pos - len);
            n -= len;
            break;
        default: /* repeat a chunk, while there is room */
            len = n - pos ? (size_t)(next_rand(seed) % (n - pos)) % 64 : 0;
            if (n + len > 2 * size + 16)
                break;
            memmove(buf + pos + len, buf + pos, n - pos);
            n += len;
            break;
        }
    }
    return n;
}

static int run_file(struct replay *r, const char *path)
{
    uint8_t *data, *buf;
    size_t size = 0;
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    data = malloc(REPLAY_MAX_BYTES);
    if (data == NULL)
        abort();
    for (;;) {
        ssize_t got = read(fd, data + size, REPLAY_MAX_BYTES - size);

        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        size += (size_t)got;
        if (size == REPLAY_MAX_BYTES)
            break;
    }
    close(fd);
    r->files++;
    run_one(r, data, size);
    for (size_t i = 0; i < size; i++)
        seed = (seed ^ data[i]) * 0x100000001b3ull;
    buf = malloc(2 * size + 16);
    if (buf == NULL)
        abort();
    for (unsigned long k = 0; k < r->mutate; k++)
        run_one(r, buf, mutate(data, size, &seed, buf));
    free(buf);
    free(data);
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_path(struct replay *r, const char *path)
{
    struct stat st;
    DIR *d;
    struct dirent *e;
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;

    if (stat(path, &st) != 0) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode))
        return run_file(r, path);
    d = opendir(path);
    if (d == NULL) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            names = realloc(names, cap * sizeof(*names));
            if (names == NULL)
                abort();
        }
        if (asprintf(&names[n++], "%s/%s", path, e->d_name) < 0)
            abort();
    }
    closedir(d);
    qsort(names, n, sizeof(*names), cmp_names);
    for (size_t i = 0; i < n; i++) {
        if (run_path(r, names[i]) != 0)
            rc = -1;
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    struct replay r = { 0, 0, 0 };
    struct timespec t0, t1;
    int i = 1, rc = 0;

    if (LLVMFuzzerInitialize != NULL)
        LLVMFuzzerInitialize(&argc, &argv);
    if (i + 1 < argc && strcmp(argv[i], "--mutate") == 0) {
        r.mutate = strtoul(argv[i + 1], NULL, 10);
        i += 2;
    }
    if (i >= argc) {
        fprintf(stderr, "usage: %s [--mutate N] FILE|DIR...\n", argv[0]);
        return 64;
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (; i < argc; i++) {
        if (run_path(&r, argv[i]) != 0)
            rc = 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("replay: %lu files, %lu inputs (%lu variants each), %.0f ms\n", r.files, r.inputs,
           r.mutate,
           (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
    if (r.files == 0) {
        fprintf(stderr, "replay: no input files: an empty corpus tests nothing\n");
        rc = 1;
    }
    return rc;
}
