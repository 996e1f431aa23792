/* caterva_get_slice_buffer: slices of an array made with caterva_from_buffer
 * hold the values of their C-order positions in the array. */
#include <stdlib.h>

#include "harness.h"

#define SENTINEL 0xEE

/* Read array[start:stop] into a buffer of shape bshape (NULL: the slice's
 * shape) and check every item: the slice's items at their bshape positions,
 * SENTINEL everywhere else. */
static int check_slice(caterva_ctx_t *ctx, caterva_array_t *arr, const test_case_t *tc, const int64_t *start,
                       const int64_t *stop, const int64_t *bshape_in) {
    int8_t ndim = tc->shape.ndim;
    uint8_t itemsize = tc->itemsize;
    int64_t sshape[CATERVA_MAX_DIM] = {0};
    int64_t bshape[CATERVA_MAX_DIM] = {0};
    for (int i = 0; i < ndim; i++) {
        sshape[i] = stop[i] - start[i];
        bshape[i] = bshape_in != NULL ? bshape_in[i] : sshape[i];
    }
    int64_t snitems = h_nitems(ndim, sshape);
    int64_t bnitems = h_nitems(ndim, bshape);
    int64_t bsize = bnitems * itemsize;
    /* One spare item past the end, to catch writes beyond buffersize. */
    uint8_t *buf = malloc((size_t)(bsize + itemsize));
    CHECK(buf != NULL);
    memset(buf, SENTINEL, (size_t)(bsize + itemsize));
    int64_t start_c[CATERVA_MAX_DIM], stop_c[CATERVA_MAX_DIM], bshape_c[CATERVA_MAX_DIM];
    memcpy(start_c, start, sizeof(start_c));
    memcpy(stop_c, stop, sizeof(stop_c));
    memcpy(bshape_c, bshape, sizeof(bshape_c));
    CHECK_OK(caterva_get_slice_buffer(ctx, arr, start_c, stop_c, buf, bshape_c, bsize));
    /* The arguments are not modified. */
    CHECK(memcmp(start_c, start, (size_t)ndim * sizeof(int64_t)) == 0);
    CHECK(memcmp(stop_c, stop, (size_t)ndim * sizeof(int64_t)) == 0);
    CHECK(memcmp(bshape_c, bshape, (size_t)ndim * sizeof(int64_t)) == 0);

    /* Mark the buffer positions that the slice covers while checking them. */
    uint8_t *covered = calloc((size_t)bnitems + 1, 1);
    CHECK(covered != NULL);
    int64_t j[CATERVA_MAX_DIM] = {0};
    int64_t a[CATERVA_MAX_DIM] = {0};
    if (snitems > 0) {
        do {
            for (int i = 0; i < ndim; i++) {
                a[i] = start[i] + j[i];
            }
            int64_t apos = h_linear(ndim, tc->shape.shape, a);
            int64_t bpos = h_linear(ndim, bshape, j);
            CHECK(h_get(buf, bpos, itemsize) == h_value(apos, itemsize));
            covered[bpos] = 1;
        } while (h_next_index(ndim, sshape, j));
    }
    for (int64_t p = 0; p < bnitems; p++) {
        if (!covered[p]) {
            for (int k = 0; k < itemsize; k++) {
                CHECK(buf[p * itemsize + k] == SENTINEL);
            }
        }
    }
    for (int k = 0; k < itemsize; k++) {
        CHECK(buf[bsize + k] == SENTINEL);
    }
    free(covered);
    free(buf);
    return 0;
}

static int test_get_slice_buffer(const test_case_t *tc) {
    if (h_skip_disk_itemsize(tc)) {
        return 0;
    }
    caterva_ctx_t *ctx = NULL;
    char path[256];
    caterva_params_t params;
    caterva_storage_t storage;
    CHECK_OK(h_setup(tc, "get_slice", &ctx, path, &params, &storage));
    int8_t ndim = tc->shape.ndim;
    const int64_t *shape = tc->shape.shape;
    int64_t nitems = h_nitems(ndim, shape);
    int64_t nbytes = nitems * tc->itemsize;
    uint8_t *src = malloc((size_t)nbytes + 1);
    CHECK(src != NULL);
    h_fill_buffer(src, nitems, tc->itemsize);
    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_from_buffer(ctx, src, nbytes, &params, &storage, &arr));
    free(src);

    int64_t start[CATERVA_MAX_DIM] = {0};
    int64_t stop[CATERVA_MAX_DIM] = {0};
    int64_t bshape[CATERVA_MAX_DIM] = {0};

    /* The whole array. */
    for (int i = 0; i < ndim; i++) {
        start[i] = 0;
        stop[i] = shape[i];
    }
    if (check_slice(ctx, arr, tc, start, stop, NULL)) {
        return 1;
    }

    /* An interior slice, in general not aligned to chunks or blocks. */
    for (int i = 0; i < ndim; i++) {
        start[i] = shape[i] / 3;
        stop[i] = shape[i] - shape[i] / 4;
        if (stop[i] < start[i]) {
            stop[i] = start[i];
        }
    }
    if (check_slice(ctx, arr, tc, start, stop, NULL)) {
        return 1;
    }

    /* The same interior slice into a larger buffer: it goes at the start,
     * rows laid out with the buffer's strides; the rest stays untouched. */
    for (int i = 0; i < ndim; i++) {
        bshape[i] = stop[i] - start[i] + 1 + (i % 2);
    }
    if (check_slice(ctx, arr, tc, start, stop, bshape)) {
        return 1;
    }

    /* A slice of length 0 on the last axis (and on the first). */
    if (ndim > 0) {
        int64_t s2[CATERVA_MAX_DIM], e2[CATERVA_MAX_DIM];
        memcpy(s2, start, sizeof(s2));
        memcpy(e2, stop, sizeof(e2));
        e2[ndim - 1] = s2[ndim - 1];
        if (check_slice(ctx, arr, tc, s2, e2, NULL)) {
            return 1;
        }
        memcpy(e2, stop, sizeof(e2));
        s2[0] = shape[0];
        e2[0] = shape[0];
        if (check_slice(ctx, arr, tc, s2, e2, NULL)) {
            return 1;
        }
    }

    /* Single items: the first, one in the middle, the last. */
    if (nitems > 0) {
        for (int which = 0; which < 3; which++) {
            for (int i = 0; i < ndim; i++) {
                start[i] = which == 0 ? 0 : which == 1 ? shape[i] / 2 : shape[i] - 1;
                stop[i] = start[i] + 1;
            }
            if (check_slice(ctx, arr, tc, start, stop, NULL)) {
                return 1;
            }
        }
        /* A single item into a larger buffer. */
        for (int i = 0; i < ndim; i++) {
            start[i] = shape[i] / 2;
            stop[i] = start[i] + 1;
            bshape[i] = 3;
        }
        if (check_slice(ctx, arr, tc, start, stop, bshape)) {
            return 1;
        }
    }

    /* One row along each axis (a 1-wide slab through the array). */
    for (int ax = 0; ax < ndim && nitems > 0; ax++) {
        for (int i = 0; i < ndim; i++) {
            start[i] = i == ax ? 0 : shape[i] - 1;
            stop[i] = i == ax ? shape[i] : shape[i];
        }
        if (check_slice(ctx, arr, tc, start, stop, NULL)) {
            return 1;
        }
    }

    CHECK_OK(caterva_free(ctx, &arr));
    if (storage.urlpath != NULL) {
        /* The same slices from the array reopened from disk. */
        CHECK_OK(caterva_open(ctx, path, &arr));
        for (int i = 0; i < ndim; i++) {
            start[i] = (shape[i] + 1) / 4;
            stop[i] = shape[i] - shape[i] / 5;
            bshape[i] = stop[i] - start[i] + 2;
        }
        if (check_slice(ctx, arr, tc, start, stop, NULL) || check_slice(ctx, arr, tc, start, stop, bshape)) {
            return 1;
        }
        CHECK_OK(caterva_free(ctx, &arr));
        CHECK_OK(caterva_remove(ctx, path));
    }
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

void suite_get_slice_buffer(void) {
    RUN_ALL_CASES(test_get_slice_buffer);
}
