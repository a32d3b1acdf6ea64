/*
 * libmicrohttpd, loaded with dlopen when `serve` starts. Linking it would load GnuTLS and its
 * dependencies into every command and cost `check` milliseconds and megabytes it is budgeted not
 * to spend (docs/performance.md). The types and constants come from <microhttpd.h>; each pointer
 * has the exact type of the function it stands for.
 */
#ifndef GPUDOCTOR_SERVE_MHD_H
#define GPUDOCTOR_SERVE_MHD_H

#include <microhttpd.h>

struct mhd_api {
    __typeof__(&MHD_start_daemon) start_daemon;
    __typeof__(&MHD_stop_daemon) stop_daemon;
    __typeof__(&MHD_quiesce_daemon) quiesce_daemon;
    __typeof__(&MHD_create_response_from_buffer) create_response_from_buffer;
    __typeof__(&MHD_create_response_from_iovec) create_response_from_iovec;
    __typeof__(&MHD_add_response_header) add_response_header;
    __typeof__(&MHD_queue_response) queue_response;
    __typeof__(&MHD_destroy_response) destroy_response;
    __typeof__(&MHD_get_connection_values) get_connection_values;
};

/* Filled by mhd_load(); process-wide, like the library it describes. */
extern struct mhd_api mhd;

/*
 * Loads the library once (later calls return at once). Returns 0, or -1 with *cause saying what is
 * missing and which package provides it (the caller frees it).
 */
int mhd_load(char **cause);

#endif
