/* Runs every suite; the last line is "N passed, N failed". */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <time.h>

#include "harness.h"

#define SUITES(X) X(abi) X(header) X(zeros) X(full) X(roundtrip) X(get_slice_buffer) X(set_slice_buffer) X(persistency) X(save) X(metalayers) X(serialize) X(cframe) X(bad_input) X(dtype) X(checksums) \
    X(resize) X(insert) X(delete) X(squeeze) X(get_slice) X(copy) X(orthogonal) X(reshape_mixed) X(reshape_bad_input) \
    X(hardening) X(threads) X(last_error) X(paths) X(fork) X(bounded) \
    X(extras) X(blz) X(partition) X(readonly) X(durability) X(reduce)

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
#define DECLARE(name) void suite_##name(void);
SUITES(DECLARE)

int main(int argc, char **argv) {
    const char *only = argc > 1 ? argv[1] : NULL;
    /* Line by line, so that the progress stays in order with stderr and
     * survives an abort (a sanitizer report). */
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* Each suite's wall time, so that a slow one shows in CI's log. */
#define RUN(name)                                                                              \
    if (only == NULL || strcmp(only, #name) == 0) {                                            \
        int before_ = h_failed;                                                                \
        double start_ = now_s();                                                               \
        suite_##name();                                                                        \
        printf("suite %-16s %s (%.2f s)\n", #name, h_failed == before_ ? "ok" : "FAILED",     \
               now_s() - start_);                                                              \
    }
    SUITES(RUN)
    printf("%d passed, %d failed\n", h_passed, h_failed);
    return h_failed == 0 ? 0 : 1;
}
