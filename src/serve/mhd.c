#include "serve/mhd.h"
#include "util/dynlib.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stddef.h>

#ifndef GPUDOCTOR_MHD_SONAME
#define GPUDOCTOR_MHD_SONAME "libmicrohttpd.so.12"
#endif

struct mhd_api mhd;

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static void *handle;

static const struct dynlib_sym symbols[] = {
    { "MHD_start_daemon", offsetof(struct mhd_api, start_daemon) },
    { "MHD_stop_daemon", offsetof(struct mhd_api, stop_daemon) },
    { "MHD_quiesce_daemon", offsetof(struct mhd_api, quiesce_daemon) },
    { "MHD_create_response_from_buffer", offsetof(struct mhd_api, create_response_from_buffer) },
    { "MHD_create_response_from_iovec", offsetof(struct mhd_api, create_response_from_iovec) },
    { "MHD_add_response_header", offsetof(struct mhd_api, add_response_header) },
    { "MHD_queue_response", offsetof(struct mhd_api, queue_response) },
    { "MHD_destroy_response", offsetof(struct mhd_api, destroy_response) },
    { "MHD_get_connection_values", offsetof(struct mhd_api, get_connection_values) },
};

int mhd_load(char **cause)
{
    struct mhd_api api;
    const char *missing, *why;
    void *h;
    int rc = -1;

    pthread_mutex_lock(&load_lock);
    if (handle != NULL) {
        rc = 0;
        goto out;
    }
    h = dynlib_open(GPUDOCTOR_MHD_SONAME, symbols, ARRAY_SIZE(symbols), &api, &missing, &why);
    if (h == NULL) {
        if (missing != NULL)
            *cause = xasprintf("%s has no %s: libmicrohttpd 0.9.72 or newer is needed",
                               GPUDOCTOR_MHD_SONAME, missing);
        else
            *cause = xasprintf("cannot load %s, which serve needs (Debian package "
                               "libmicrohttpd12): %s",
                               GPUDOCTOR_MHD_SONAME, why);
        goto out;
    }
    mhd = api;
    handle = h;
    rc = 0;
out:
    pthread_mutex_unlock(&load_lock);
    return rc;
}
