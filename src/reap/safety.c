/*
 * What reap never touches: PID 1, kernel threads, gpudoctor itself and its ancestors (the shell,
 * sshd, the terminal it runs in), other users' processes unless root asked for all users, and
 * the protected programs (display servers, the NVIDIA daemons the GPUs need, the services the
 * machine is reached and scheduled through) unless the operator names the pid.
 */
#include "collect/procfs.h"
#include "reap/reap.h"
#include "util/i18n.h"
#include "util/xalloc.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* clang-format off */
const struct reap_protected reap_protected_list[] = {
    { "Xorg",            N_("the X display server: ending it ends every graphical session") },
    { "X",               N_("the X display server: ending it ends every graphical session") },
    { "Xwayland",        N_("the X server of a Wayland desktop: ending it closes its X windows") },
    { "gnome-shell",     N_("the GNOME desktop: ending it ends the desktop session") },
    { "kwin_x11",        N_("the KDE window manager: ending it ends the desktop session") },
    { "kwin_wayland",    N_("the KDE compositor: ending it ends the desktop session") },
    { "plasmashell",     N_("the KDE desktop: ending it ends the desktop session") },
    { "mutter",          N_("a desktop compositor: ending it ends the desktop session") },
    { "sway",            N_("a desktop compositor: ending it ends the desktop session") },
    { "weston",          N_("a desktop compositor: ending it ends the desktop session") },
    { "Hyprland",        N_("a desktop compositor: ending it ends the desktop session") },
    { "gdm*",            N_("the display manager: ending it ends every graphical login") },
    { "sddm*",           N_("the display manager: ending it ends every graphical login") },
    { "lightdm*",        N_("the display manager: ending it ends every graphical login") },
    { "nvidia-persistenced", N_("keeps the driver initialised between jobs: without it every GPU "
                         "starts cold and some settings are lost") },
    { "nv-hostengine",   N_("DCGM's host engine: GPU health checks, policies and monitoring") },
    { "dcgm*",           N_("DCGM: GPU monitoring and exporters") },
    { "nv-fabricmanager", N_("the NVSwitch fabric manager: without it CUDA fails on NVSwitch "
                         "systems") },
    { "nvidia-fabricmanager", N_("the NVSwitch fabric manager: without it CUDA fails on NVSwitch "
                         "systems") },
    { "nvidia-powerd",   N_("NVIDIA's dynamic power daemon") },
    { "nvidia-cuda-mps-*", N_("the MPS daemon: every MPS client's work runs through it (quit it "
                         "with echo quit | nvidia-cuda-mps-control)") },
    { "sshd",            N_("the SSH server: ending it can cut off remote access to the machine") },
    { "systemd",         N_("the service manager") },
    { "init",            N_("the init process") },
    { "dockerd",         N_("the container runtime: stop the container instead (docker stop)") },
    { "containerd",      N_("the container runtime: stop the container instead") },
    { "containerd-shim*", N_("a container's runtime shim: stop the container instead") },
    { "conmon",          N_("a container's monitor: stop the container instead (podman stop)") },
    { "crio",            N_("the container runtime: stop the container instead") },
    { "kubelet",         N_("the Kubernetes node agent: delete the pod instead") },
    { "slurmd",          N_("the Slurm node daemon: cancel the job instead (scancel)") },
    { "slurmstepd",      N_("a Slurm job step's manager: cancel the job instead (scancel)") },
};
/* clang-format on */
const size_t reap_n_protected = ARRAY_SIZE(reap_protected_list);

const char *const reap_refusal_names[] = {
    "allowed",  "pid-1",       "kernel-thread", "self",
    "ancestor", "other-user",  "owner-unknown", "protected",
    "not-gpu",  "not-visible", "changed",       "container-init",
    NULL,
};

/* The last part of a path. */
static const char *base(const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;

    return slash ? slash + 1 : path;
}

/*
 * The kernel keeps 15 bytes of a command name: "nvidia-persistenced" is "nvidia-persiste".
 * A name of exactly that length may be cut, so it is held against the pattern cut as well.
 */
static bool comm_matches(const char *pattern, const char *comm)
{
    char cut[16];

    if (comm[0] == '\0')
        return false;
    if (fnmatch(pattern, comm, 0) == 0)
        return true;
    if (strlen(comm) != sizeof(cut) - 1)
        return false;
    snprintf(cut, sizeof(cut), "%s", pattern);
    return fnmatch(cut, comm, 0) == 0;
}

const struct reap_protected *reap_protected_match(const struct reap_facts *f)
{
    const char *exe = base(f->exe), *argv0 = base(f->argv0);

    for (size_t i = 0; i < reap_n_protected; i++) {
        const char *pat = reap_protected_list[i].pattern;

        if (comm_matches(pat, f->comm) || (exe && *exe && fnmatch(pat, exe, 0) == 0) ||
            (argv0 && *argv0 && fnmatch(pat, argv0, 0) == 0))
            return &reap_protected_list[i];
    }
    return NULL;
}

/* The parent of pid in the live /proc, or -1. */
static int32_t live_ppid(int proc_fd, int32_t pid)
{
    char path[32], buf[2048], why[64];
    struct procfs_stat st;

    snprintf(path, sizeof(path), "%d/stat", (int)pid);
    if (procfs_read_small(proc_fd, path, buf, sizeof(buf)) <= 0 ||
        procfs_parse_stat(buf, &st, why, sizeof(why)) != 0)
        return -1;
    return st.ppid;
}

void reap_guard_init(struct reap_guard *g, bool all_users)
{
    int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct passwd pw, *found = NULL;
    char pwbuf[4096];
    size_t cap = 0;

    memset(g, 0, sizeof(*g));
    g->self = (int32_t)getpid();
    g->uid = (uint32_t)getuid();
    g->root = geteuid() == 0;
    if (getpwuid_r(g->uid, &pw, pwbuf, sizeof(pwbuf), &found) == 0 && found)
        snprintf(g->user, sizeof(g->user), "%s", found->pw_name);
    else
        snprintf(g->user, sizeof(g->user), "uid %u", (unsigned)g->uid);
    g->all_users = all_users;
    /* Parent, grandparent, ... A chain longer than this is a loop in a garbled /proc. */
    for (int32_t p = (int32_t)getppid(); p > 0 && g->n_ancestors < 4096;) {
        xgrow(&g->ancestors, &cap, g->n_ancestors + 1, sizeof(*g->ancestors));
        g->ancestors[g->n_ancestors++] = p;
        if (p == 1 || proc_fd < 0)
            break;
        p = live_ppid(proc_fd, p);
    }
    if (proc_fd >= 0)
        close(proc_fd);
}

void reap_guard_free(struct reap_guard *g)
{
    free(g->ancestors);
    memset(g, 0, sizeof(*g));
}

static bool is_kthread(const struct reap_facts *f)
{
    if (f->have_flags)
        return (f->flags & PROCFS_PF_KTHREAD) != 0;
    /* Without the flags (a snapshot): kthreadd is 2 and the parent of every other. */
    return f->pid == 2 || f->ppid == 2;
}

/* The English sentence in why, and its translation in why_l (when asked for; "" without one). */
static void say(char *why, char *why_l, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void say(char *why, char *why_l, size_t size, const char *fmt, ...)
{
    va_list ap, aq;
    char *l;

    va_start(ap, fmt);
    va_copy(aq, ap);
    vsnprintf(why, size, fmt, ap);
    if (why_l != NULL) {
        l = i18n_vformat(fmt, aq);
        snprintf(why_l, size, "%s", l ? l : "");
        free(l);
    }
    va_end(aq);
    va_end(ap);
}

enum reap_refusal reap_check(const struct reap_guard *g, const struct reap_facts *f, bool named,
                             char *why, char *why_l, size_t size)
{
    const struct reap_protected *prot;
    const char *comm = f->comm[0] ? f->comm : "?";

    if (f->pid <= 1) {
        say(why, why_l, size, "PID %d is init: ending it ends the machine (or the container)",
            (int)f->pid);
        return REAP_REFUSE_PID1;
    }
    /* A namespace's init ignores the signals it has no handler for, so SIGTERM does nothing and
     * the SIGKILL after it ends every process of the container: the jobs no plan named. */
    if (f->have_nspid && f->ns_depth > 0 && f->ns_pid == 1) {
        say(why, why_l, size,
            "PID %d is the init of a container (PID 1 in its own PID namespace): ending it ends "
            "every process in the container; stop the container, or delete the pod, instead",
            (int)f->pid);
        return REAP_REFUSE_CONTAINER_INIT;
    }
    if (is_kthread(f)) {
        say(why, why_l, size, "a kernel thread (%s): it cannot be ended, and holds no GPU memory",
            comm);
        return REAP_REFUSE_KTHREAD;
    }
    if (f->pid == g->self) {
        say(why, why_l, size, "gpudoctor itself");
        return REAP_REFUSE_SELF;
    }
    for (size_t i = 0; i < g->n_ancestors; i++) {
        if (g->ancestors[i] == f->pid) {
            say(why, why_l, size,
                "an ancestor of this gpudoctor (%s): ending it would end this session", comm);
            return REAP_REFUSE_ANCESTOR;
        }
    }
    if (!f->have_uid) {
        say(why, why_l, size, "its owner could not be read");
        return REAP_REFUSE_OWNER_UNKNOWN;
    }
    if (f->uid != g->uid && !(g->root && g->all_users)) {
        if (f->user && g->root)
            say(why, why_l, size,
                "belongs to %s (uid %u), not to you (%s): add --all-users to end other users' "
                "processes",
                f->user, (unsigned)f->uid, g->user);
        else if (f->user)
            say(why, why_l, size,
                "belongs to %s (uid %u), not to you (%s): only root, with --all-users, ends "
                "other users' processes",
                f->user, (unsigned)f->uid, g->user);
        else if (g->root)
            say(why, why_l, size,
                "belongs to uid %u, not to you (%s): add --all-users to end other users' "
                "processes",
                (unsigned)f->uid, g->user);
        else
            say(why, why_l, size,
                "belongs to uid %u, not to you (%s): only root, with --all-users, ends other "
                "users' processes",
                (unsigned)f->uid, g->user);
        return REAP_REFUSE_OTHER_USER;
    }
    prot = reap_protected_match(f);
    if (prot != NULL && !named) {
        /* The reason is the table's, translated for people on its own. */
        snprintf(why, size, "protected: %s (%s); name its pid with --pid to end it anyway",
                 prot->pattern, prot->why);
        if (why_l != NULL && i18n_active())
            snprintf(why_l, size, _("protected: %s (%s); name its pid with --pid to end it anyway"),
                     prot->pattern, _(prot->why));
        else if (why_l != NULL)
            why_l[0] = '\0';
        return REAP_REFUSE_PROTECTED;
    }
    why[0] = '\0';
    if (why_l != NULL)
        why_l[0] = '\0';
    return REAP_ALLOWED;
}
