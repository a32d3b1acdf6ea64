/*
 * How the stack collector reads the tree: paths joined, normalised and resolved inside the root
 * (symbolic links followed there, never out of it), files read whole up to a bound, directories
 * listed sorted, and the version a pip dist-info directory names.
 */
#include "collect/stack-internal.h"
#include "collect/stack-versions.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DIR_ENTRIES 20000 /* of one directory */
#define MAX_LINK_HOPS   16

/* Resolves "." and ".." of an absolute path textually. */
static char *path_normalize(const char *path)
{
    char *out = xmalloc(strlen(path) + 2);
    size_t len = 0;
    const char *p = path;

    while (*p) {
        size_t n;

        while (*p == '/')
            p++;
        n = strcspn(p, "/");
        if (n == 0)
            break;
        if (n == 1 && p[0] == '.') {
            /* nothing */
        } else if (n == 2 && p[0] == '.' && p[1] == '.') {
            while (len > 0 && out[len - 1] != '/')
                len--;
            if (len > 0)
                len--;
        } else {
            out[len++] = '/';
            memcpy(out + len, p, n);
            len += n;
        }
        p += n;
    }
    if (len == 0)
        out[len++] = '/';
    out[len] = '\0';
    return out;
}

char *stack_path_join(const char *dir, const char *name)
{
    size_t n = strlen(dir);

    return xasprintf("%s%s%s", dir, n > 0 && dir[n - 1] == '/' ? "" : "/", name);
}

char *stack_path_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');

    if (slash == NULL || slash == path)
        return xstrdup("/");
    return xstrndup(path, (size_t)(slash - path));
}

const char *stack_path_basename(const char *path)
{
    const char *slash = strrchr(path, '/');

    return slash ? slash + 1 : path;
}

/* prefix + path, relative to the root fd ("proc/12/root/usr/lib" or "usr/lib"). */
char *stack_rel_path(const char *prefix, const char *path)
{
    return prefix && *prefix ? xasprintf("%s/%s", prefix, sysroot_rel(path))
                             : xstrdup(sysroot_rel(path));
}

/*
 * Follows the symbolic links of path's last component (and of what they point to) inside the
 * tree at prefix, so absolute link targets stay in a fixture tree. Returns the final path.
 */
char *stack_resolve(int rootfd, const char *prefix, const char *path)
{
    char *cur = path_normalize(path);

    for (int hop = 0; hop < MAX_LINK_HOPS; hop++) {
        char target[4096], *rel = stack_rel_path(prefix, cur), *next;
        ssize_t n = file_readlink_at(rootfd, rel, target, sizeof(target));

        free(rel);
        if (n <= 0)
            break;
        if (target[0] == '/') {
            next = path_normalize(target);
        } else {
            char *dir = stack_path_dirname(cur), *joined = stack_path_join(dir, target);

            next = path_normalize(joined);
            free(dir);
            free(joined);
        }
        free(cur);
        cur = next;
    }
    return cur;
}

bool stack_exists_in(int rootfd, const char *prefix, const char *path, mode_t type)
{
    char *rel = stack_rel_path(prefix, path);
    struct stat st;
    bool ok = fstatat(rootfd, rel, &st, 0) == 0 && (type == 0 || (st.st_mode & S_IFMT) == type);

    free(rel);
    return ok;
}

ssize_t stack_slurp_in(int rootfd, const char *prefix, const char *path, size_t max, char **out)
{
    char *rel = stack_rel_path(prefix, path);
    ssize_t n = file_slurp_at(rootfd, rel, max, out);

    free(rel);
    return n;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in directory path (sorted, at most MAX_DIR_ENTRIES, no dot entries); NULL when it
 * cannot be opened. */
char **stack_list_dir(int rootfd, const char *prefix, const char *path, size_t *n)
{
    char *rel = stack_rel_path(prefix, path);
    DIR *d = dir_open_at(rootfd, rel);
    char **names = NULL;
    size_t cap = 0;
    struct dirent *de;

    free(rel);
    *n = 0;
    if (d == NULL)
        return NULL;
    while ((de = readdir(d)) != NULL && *n < MAX_DIR_ENTRIES) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        xgrow(&names, &cap, *n + 1, sizeof(*names));
        names[(*n)++] = xstrdup(de->d_name);
    }
    closedir(d);
    if (names == NULL)
        names = xcalloc(1, sizeof(*names));
    qsort(names, *n, sizeof(*names), cmp_str);
    return names;
}

void stack_free_list(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* The version of the first dist-info in dir whose project is prefix (or prefix_cuNN). */
char *stack_dist_info_version(int rootfd, const char *prefix, const char *dir, const char *project)
{
    size_t n;
    char **names = stack_list_dir(rootfd, prefix, dir, &n);
    char *version = NULL;

    for (size_t i = 0; names && i < n && version == NULL; i++) {
        char *v;

        if (!stackver_dist_info(names[i], project, &v))
            continue;
        /* METADATA is what pip reads; the directory name is the fallback. */
        {
            char *meta_path = xasprintf("%s/%s/METADATA", dir, names[i]), *text = NULL;

            if (stack_slurp_in(rootfd, prefix, meta_path, SMALL_FILE_MAX, &text) >= 0)
                version = stackver_metadata_version(text);
            free(text);
            free(meta_path);
        }
        if (version == NULL)
            version = v;
        else
            free(v);
    }
    stack_free_list(names, n);
    return version;
}

/* "/x/site-packages/nvidia/cudnn/lib/libcudnn.so.9" -> "/x/site-packages" */
char *stack_site_packages_of(const char *path)
{
    static const char *const markers[] = { "/site-packages/", "/dist-packages/" };

    for (size_t i = 0; i < ARRAY_SIZE(markers); i++) {
        const char *m = strstr(path, markers[i]);

        if (m != NULL)
            return xstrndup(path, (size_t)(m - path) + strlen(markers[i]) - 1);
    }
    return NULL;
}
