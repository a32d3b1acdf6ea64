/*
 * An NVML session: a helper process that owns the NVML library and answers
 * requests, so that a wedged driver can never block the caller. Every request has a deadline;
 * when it passes, the helper is killed (SIGKILL) and the session reports which NVML call did not
 * answer, read from a shared page the helper updates before each call.
 *
 * One-shot commands open a session, ask for everything, sample over the window and close it;
 * `watch` and `serve` keep one open and sample every interval. A session that timed out or whose
 * helper died stays dead: every later request returns the same status at once, and the caller
 * may close it and open a new one.
 *
 * Use a session from one thread at a time. Sessions keep a small process-wide list of helpers that
 * were killed but could not be reaped yet (stuck in the kernel), reaped by later calls.
 */
#ifndef GPUDOCTOR_NVML_SESSION_H
#define GPUDOCTOR_NVML_SESSION_H

#include "snapshot/snap-gpu.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum nvml_session_status {
    NVML_SESSION_OK,
    NVML_SESSION_TIMEOUT, /* an NVML call did not answer before the deadline */
    NVML_SESSION_FAILED,  /* the helper died, or said something that is not an answer */
};

struct nvml_session;

/*
 * Starts the helper for library lib (a path, or a name for the dynamic loader). Nothing is
 * loaded until the first request, so this only fails when no process can be started: it then
 * returns NULL with *cause set (the caller frees it).
 */
struct nvml_session *nvml_session_open(const char *lib, char **cause);

/*
 * Everything NVML knows: loads and initialises the library on the first call, then the system
 * and every GPU. deadline_mono_ms is on time_mono_ms()'s clock. On NVML_SESSION_OK, *sys and
 * *gpus are filled (free with nvml_system_free, gpu_free and free); a library that is missing or
 * fails to initialise is still OK here: sys says so. Otherwise *cause says what went wrong in
 * one sentence and, for a timeout, *hung_call names the call ("nvmlDeviceGetPowerUsage on
 * GPU 3"); the caller frees both. Unused outputs are set to NULL.
 */
enum nvml_session_status nvml_session_full(struct nvml_session *ss, int64_t deadline_mono_ms,
                                           struct nvml_system *sys, struct gpu **gpus,
                                           size_t *n_gpus, char **hung_call, char **cause);

/* The dynamic fields of the GPUs the last full request found; outputs as nvml_session_full. */
enum nvml_session_status nvml_session_sample(struct nvml_session *ss, int64_t deadline_mono_ms,
                                             struct gpu **gpus, size_t *n_gpus, char **hung_call,
                                             char **cause);

/* The helper's process id, 0 once it is gone (for tests and diagnostics). */
pid_t nvml_session_pid(const struct nvml_session *ss);

/*
 * Asks the helper to shut NVML down and exit, waits for it until deadline_mono_ms, then kills it
 * if it is still there; never blocks past the deadline. Frees ss (NULL is fine).
 */
void nvml_session_close(struct nvml_session *ss, int64_t deadline_mono_ms);

/* Reaps killed helpers that have died since; returns how many are still not reaped. */
size_t nvml_session_reap(void);

/*
 * The helper is gpudoctor itself, started again (fork, then execve of its own executable with
 * NVML_SESSION_HELPER_ARG, which main hands to nvml_session_helper_main): `serve` and `watch`
 * have threads, and the fork of a process with threads may only make async-signal-safe calls,
 * since a lock another thread held at fork time (the allocator's) never unlocks in the copy.
 * A program calls nvml_session_use_own_program once, at start; without it (unit tests, single
 * threaded) the fork itself is the helper.
 */
#define NVML_SESSION_HELPER_ARG "--nvml-helper"
void nvml_session_use_own_program(void);

/* The helper program's main: argv is {name, NVML_SESSION_HELPER_ARG, parent pid, library}, the
 * connection is fd 3 and the watched page fd 4. Returns only on bad arguments (64, with a message
 * on stderr); otherwise it serves requests and exits. */
int nvml_session_helper_main(int argc, char **argv);

/* Killed helpers that may remain unreaped at once; nvml_session_open refuses beyond this. */
#define NVML_SESSION_MAX_STUCK 8

#endif
