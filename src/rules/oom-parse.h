/*
 * What PyTorch's "CUDA out of memory" error says, read from its text: the GPU (CUDA's index), what
 * was asked for, the GPU's capacity and what was free, what the failing process and the other
 * processes held, and what PyTorch's caching allocator kept reserved but unallocated. Two
 * wordings: PyTorch 2.1 and later ("GPU 0 has a total capacity of 23.64 GiB of which 11.06 MiB is
 * free. Process 1234 has 1.52 GiB memory in use. Including non-PyTorch memory, this process has
 * 22.10 GiB memory in use. Of the allocated memory 21.50 GiB is allocated by PyTorch, and 200.00
 * MiB is reserved by PyTorch but unallocated."), and earlier ones ("(GPU 0; 10.76 GiB total
 * capacity; 9.56 GiB already allocated; 17.19 MiB free; 9.77 GiB reserved in total by
 * PyTorch)").
 */
#ifndef GPUDOCTOR_RULES_OOM_PARSE_H
#define GPUDOCTOR_RULES_OOM_PARSE_H

#include <stddef.h>
#include <stdint.h>

#define OOM_MAX_PROCS 8

struct oom_text {
    int32_t gpu; /* CUDA's index of the GPU, as the failing process numbered it; -1 unknown */
    /* Bytes; -1 when the text does not say. */
    double tried, capacity, free, this_process, allocated, reserved_unallocated, reserved_total;
    int32_t pids[OOM_MAX_PROCS]; /* other processes on that GPU ("Process P has W in use") */
    double pid_bytes[OOM_MAX_PROCS];
    size_t n_pids;
};

/* Reads text; returns how many figures it found (0: none of PyTorch's). */
int oom_parse(const char *text, struct oom_text *o);

/* "20.00 MiB", "1.52 GiB", "0 bytes" at s: bytes, or -1; *end after the unit. */
double oom_size(const char *s, const char **end);

#endif
