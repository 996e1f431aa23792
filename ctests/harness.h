/*
 * A small parametrised test harness for the C suite.
 *
 * Each test file defines functions `int test_xxx(const test_case_t *tc)` that
 * return 0 on success, and a suite function that hands them to RUN_ALL_CASES
 * (every case of the shared table) or RUN_CASE (one case). main.c runs the
 * suites and prints "N passed, N failed" as its last line.
 */
#ifndef CATERVA_CTESTS_HARNESS_H
#define CATERVA_CTESTS_HARNESS_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "caterva.h"

/* The shapes of the original suite: 0-dim, 1-D to 6-D, empty axes, length-1
 * axes, ragged edge chunks and blocks. */
typedef struct {
    int8_t ndim;
    int64_t shape[CATERVA_MAX_DIM];
    int32_t chunkshape[CATERVA_MAX_DIM];
    int32_t blockshape[CATERVA_MAX_DIM];
} shape_case_t;

/* The four storages: in memory or on disk, contiguous or sparse. */
typedef struct {
    bool contiguous;
    bool persistent;
} backend_t;

typedef struct {
    uint8_t itemsize;
    shape_case_t shape;
    backend_t backend;
} test_case_t;

extern const shape_case_t SHAPES[];
extern const size_t NSHAPES;
extern const backend_t BACKENDS[4];
extern const uint8_t ITEMSIZES[4];

/* Counters kept by the harness. */
extern int h_passed;
extern int h_failed;

/* Report one case. */
void h_report(const char *test, const test_case_t *tc, int rc);

/* A path for persistent storages ("ctest_<tag>.b2frame" or "ctest_<tag>.b2nd"), or NULL. */
char *h_urlpath(const test_case_t *tc, const char *tag);

/* The common start of a case: a default context in *ctx, params and storage
 * from the case, and for persistent backends the path h_urlpath(tc, tag) copied
 * into path (256 bytes) with whatever an earlier run left there removed.
 * storage->urlpath is path, or NULL in memory. Returns a caterva code. */
int h_setup(const test_case_t *tc, const char *tag, caterva_ctx_t **ctx, char *path, caterva_params_t *params,
            caterva_storage_t *storage);

/* Fill params/storage from a case (urlpath from h_urlpath). */
void h_fill(const test_case_t *tc, caterva_params_t *params, caterva_storage_t *storage, char *urlpath);

/* Fill a buffer with item i = i+1 (little endian, truncated to itemsize). */
void h_fill_buffer(void *buf, int64_t nitems, uint8_t itemsize);

/* Item value at linear index i as written by h_fill_buffer. */
uint64_t h_value(int64_t i, uint8_t itemsize);

/* Read item i of buf as an unsigned integer (itemsize <= 8). */
uint64_t h_get(const void *buf, int64_t i, uint8_t itemsize);

int64_t h_nitems(int8_t ndim, const int64_t *shape);

/* Whether to skip a case to save time: on-disk cases with itemsize 2 or 4
 * (the disk layer does not depend on the itemsize; 1 and 8 still run). */
bool h_skip_disk_itemsize(const test_case_t *tc);

/* A small valid 2-D case: 4-byte items, shape {10, 8}, chunks {5, 4}, blocks {2, 2}. */
void h_small_params(caterva_params_t *params, caterva_storage_t *storage, char *urlpath, bool contiguous);

/* That 10x8 array in memory, filled by h_fill_buffer (its items also in
 * `data`, 320 bytes, when not NULL), and its frame: `*frame`, `*len` bytes,
 * which the caller frees when `*needs_free`. Returns 0, or 1 after a
 * failed check. */
int h_small_frame(caterva_ctx_t *ctx, uint8_t *data, caterva_array_t **arr, uint8_t **frame, int64_t *len,
                  bool *needs_free);

/* Whether something (file or directory) exists at path. */
bool h_exists(const char *path);

/* Whether path is a directory. */
bool h_is_dir(const char *path);

/* Advance idx, a multi-index inside shape (ndim dims), in C order; false
 * once it has gone past the last index. */
bool h_next_index(int8_t ndim, const int64_t *shape, int64_t *idx);

/* C-order linear position of idx inside shape (ndim dims). */
int64_t h_linear(int8_t ndim, const int64_t *shape, const int64_t *idx);

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "    %s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            return 1;                                                                \
        }                                                                            \
    } while (0)

#define CHECK_RC(expr, expected)                                                     \
    do {                                                                             \
        int h_rc_ = (expr);                                                          \
        if (h_rc_ != (expected)) {                                                   \
            fprintf(stderr, "    %s:%d: %s returned %d (%s), expected %d (%s)\n",     \
                    __FILE__, __LINE__, #expr, h_rc_, print_error(h_rc_),            \
                    (int)(expected), print_error((int)(expected)));                  \
            return 1;                                                                \
        }                                                                            \
    } while (0)

#define CHECK_OK(expr) CHECK_RC(expr, CATERVA_SUCCEED)

/* Run fn over every itemsize x shape x backend. */
#define RUN_ALL_CASES(fn)                                                            \
    do {                                                                             \
        for (size_t i_ = 0; i_ < 4; i_++)                                            \
            for (size_t s_ = 0; s_ < NSHAPES; s_++)                                  \
                for (size_t b_ = 0; b_ < 4; b_++) {                                  \
                    test_case_t tc_ = {ITEMSIZES[i_], SHAPES[s_], BACKENDS[b_]};     \
                    h_report(#fn, &tc_, fn(&tc_));                                   \
                }                                                                    \
    } while (0)

/* Run a test that takes no case. */
#define RUN_CASE(fn) h_report(#fn, NULL, fn(NULL))

#endif
