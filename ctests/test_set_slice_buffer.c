/* caterva_set_slice_buffer: writing a slice into an array of zeros changes
 * exactly the slice's items. */
#include <stdlib.h>

#include "harness.h"

/* Whether idx lies in [start, stop). */
static bool inside(int8_t ndim, const int64_t *idx, const int64_t *start, const int64_t *stop) {
    for (int i = 0; i < ndim; i++) {
        if (idx[i] < start[i] || idx[i] >= stop[i]) {
            return false;
        }
    }
    return true;
}

/* Check the whole array: items in [start, stop) hold value(slice linear
 * position in a buffer of shape bshape), the others 0. */
static int check_array(caterva_ctx_t *ctx, caterva_array_t *arr, const test_case_t *tc, const int64_t *start,
                       const int64_t *stop, const int64_t *bshape) {
    int8_t ndim = tc->shape.ndim;
    const int64_t *shape = tc->shape.shape;
    int64_t nitems = h_nitems(ndim, shape);
    int64_t nbytes = nitems * tc->itemsize;
    uint8_t *all = malloc((size_t)nbytes + 1);
    CHECK(all != NULL);
    CHECK_OK(caterva_to_buffer(ctx, arr, all, nbytes));
    int64_t idx[CATERVA_MAX_DIM] = {0};
    int64_t j[CATERVA_MAX_DIM] = {0};
    if (nitems > 0) {
        do {
            uint64_t expected = 0;
            if (inside(ndim, idx, start, stop)) {
                for (int i = 0; i < ndim; i++) {
                    j[i] = idx[i] - start[i];
                }
                expected = h_value(h_linear(ndim, bshape, j), tc->itemsize);
            }
            CHECK(h_get(all, h_linear(ndim, shape, idx), tc->itemsize) == expected);
        } while (h_next_index(ndim, shape, idx));
    }
    free(all);
    return 0;
}

/* Write array[start:stop] from a buffer of shape bshape (NULL: the slice's
 * shape) filled with h_fill_buffer. */
static int write_slice(caterva_ctx_t *ctx, caterva_array_t *arr, const test_case_t *tc, const int64_t *start,
                       const int64_t *stop, const int64_t *bshape_in, int64_t *bshape_out) {
    int8_t ndim = tc->shape.ndim;
    for (int i = 0; i < CATERVA_MAX_DIM; i++) {
        bshape_out[i] = i < ndim ? (bshape_in != NULL ? bshape_in[i] : stop[i] - start[i]) : 1;
    }
    int64_t bnitems = h_nitems(ndim, bshape_out);
    int64_t bsize = bnitems * tc->itemsize;
    uint8_t *buf = malloc((size_t)bsize + 1);
    uint8_t *copy = malloc((size_t)bsize + 1);
    CHECK(buf != NULL && copy != NULL);
    h_fill_buffer(buf, bnitems, tc->itemsize);
    memcpy(copy, buf, (size_t)bsize);
    int64_t start_c[CATERVA_MAX_DIM], stop_c[CATERVA_MAX_DIM], bshape_c[CATERVA_MAX_DIM];
    memcpy(start_c, start, sizeof(start_c));
    memcpy(stop_c, stop, sizeof(stop_c));
    memcpy(bshape_c, bshape_out, sizeof(bshape_c));
    CHECK_OK(caterva_set_slice_buffer(ctx, buf, bshape_c, bsize, start_c, stop_c, arr));
    /* Neither the buffer nor the coordinates change. */
    CHECK(memcmp(buf, copy, (size_t)bsize) == 0);
    CHECK(memcmp(start_c, start, sizeof(start_c)) == 0);
    CHECK(memcmp(stop_c, stop, sizeof(stop_c)) == 0);
    free(buf);
    free(copy);
    return 0;
}

/* Make an array of zeros for tc (at path when persistent). */
static int make_zeros(caterva_ctx_t *ctx, const test_case_t *tc, char *path, caterva_array_t **arr) {
    caterva_params_t params;
    caterva_storage_t storage;
    if (path != NULL) {
        CHECK_OK(caterva_remove(ctx, path));
    }
    h_fill(tc, &params, &storage, path);
    CHECK_OK(caterva_zeros(ctx, &params, &storage, arr));
    return 0;
}

static int test_set_slice_buffer(const test_case_t *tc) {
    if (h_skip_disk_itemsize(tc)) {
        return 0;
    }
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    char *url = h_urlpath(tc, "set_slice");
    char path[256] = {0};
    if (url != NULL) {
        snprintf(path, sizeof(path), "%s", url);
    }
    int8_t ndim = tc->shape.ndim;
    const int64_t *shape = tc->shape.shape;
    caterva_array_t *arr = NULL;
    if (make_zeros(ctx, tc, url != NULL ? path : NULL, &arr)) {
        return 1;
    }

    /* An interior slice, in general not aligned to chunks or blocks. */
    int64_t start[CATERVA_MAX_DIM] = {0};
    int64_t stop[CATERVA_MAX_DIM] = {0};
    int64_t bshape[CATERVA_MAX_DIM];
    for (int i = 0; i < ndim; i++) {
        start[i] = shape[i] / 3;
        stop[i] = shape[i] - shape[i] / 4;
        if (stop[i] < start[i]) {
            stop[i] = start[i];
        }
    }
    if (write_slice(ctx, arr, tc, start, stop, NULL, bshape) || check_array(ctx, arr, tc, start, stop, bshape)) {
        return 1;
    }
    /* The public fields still describe the array. */
    CHECK(arr->ndim == ndim && arr->itemsize == tc->itemsize);
    CHECK(arr->nitems == h_nitems(ndim, shape));
    for (int i = 0; i < ndim; i++) {
        CHECK(arr->shape[i] == shape[i]);
    }

    if (url != NULL) {
        /* The write persists. */
        CHECK_OK(caterva_free(ctx, &arr));
        CHECK_OK(caterva_open(ctx, path, &arr));
        if (check_array(ctx, arr, tc, start, stop, bshape)) {
            return 1;
        }
    }

    /* Writing a slice of zeros over it restores an all-zero array. */
    {
        int64_t n = h_nitems(ndim, bshape) * tc->itemsize;
        uint8_t *z = calloc((size_t)n + 1, 1);
        CHECK(z != NULL);
        CHECK_OK(caterva_set_slice_buffer(ctx, z, bshape, n, start, stop, arr));
        free(z);
        int64_t all = h_nitems(ndim, shape) * tc->itemsize;
        uint8_t *buf = malloc((size_t)all + 1);
        CHECK(buf != NULL);
        memset(buf, 0x77, (size_t)all + 1);
        CHECK_OK(caterva_to_buffer(ctx, arr, buf, all));
        for (int64_t k = 0; k < all; k++) {
            CHECK(buf[k] == 0);
        }
        free(buf);
    }
    CHECK_OK(caterva_free(ctx, &arr));
    if (url != NULL) {
        CHECK_OK(caterva_remove(ctx, path));
    }
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* Other slices on fresh arrays of zeros: the whole array, a single item, an
 * empty slice, and a slice taken from the start of a larger buffer. */
static int test_set_slice_buffer_shapes(const test_case_t *tc) {
    if (tc->backend.persistent) {
        return 0; /* test_set_slice_buffer covers the disk */
    }
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    int8_t ndim = tc->shape.ndim;
    const int64_t *shape = tc->shape.shape;
    int64_t nitems = h_nitems(ndim, shape);
    int64_t start[CATERVA_MAX_DIM] = {0};
    int64_t stop[CATERVA_MAX_DIM] = {0};
    int64_t big[CATERVA_MAX_DIM] = {0};
    int64_t bshape[CATERVA_MAX_DIM];
    caterva_array_t *arr = NULL;

    /* The whole array. */
    if (make_zeros(ctx, tc, NULL, &arr)) {
        return 1;
    }
    for (int i = 0; i < ndim; i++) {
        stop[i] = shape[i];
    }
    if (write_slice(ctx, arr, tc, start, stop, NULL, bshape) || check_array(ctx, arr, tc, start, stop, bshape)) {
        return 1;
    }
    CHECK_OK(caterva_free(ctx, &arr));

    /* A single item in the middle, then the last item as well. */
    if (nitems > 0) {
        if (make_zeros(ctx, tc, NULL, &arr)) {
            return 1;
        }
        for (int i = 0; i < ndim; i++) {
            start[i] = shape[i] / 2;
            stop[i] = start[i] + 1;
        }
        if (write_slice(ctx, arr, tc, start, stop, NULL, bshape) || check_array(ctx, arr, tc, start, stop, bshape)) {
            return 1;
        }
        CHECK_OK(caterva_free(ctx, &arr));
    }

    /* An empty slice changes nothing. */
    if (ndim > 0) {
        if (make_zeros(ctx, tc, NULL, &arr)) {
            return 1;
        }
        for (int i = 0; i < ndim; i++) {
            start[i] = shape[i] / 3;
            stop[i] = i == 0 ? start[i] : shape[i];
        }
        if (write_slice(ctx, arr, tc, start, stop, NULL, bshape) || check_array(ctx, arr, tc, start, stop, bshape)) {
            return 1;
        }
        CHECK_OK(caterva_free(ctx, &arr));
    }

    /* An interior slice taken from the start of a larger buffer. */
    if (make_zeros(ctx, tc, NULL, &arr)) {
        return 1;
    }
    for (int i = 0; i < ndim; i++) {
        start[i] = (shape[i] + 1) / 4;
        stop[i] = shape[i] - shape[i] / 5;
        big[i] = stop[i] - start[i] + 1 + (i % 3);
    }
    if (write_slice(ctx, arr, tc, start, stop, big, bshape) || check_array(ctx, arr, tc, start, stop, bshape)) {
        return 1;
    }
    CHECK_OK(caterva_free(ctx, &arr));

    /* Two overlapping writes: the second wins where they overlap. */
    if (nitems > 0) {
        caterva_params_t params;
        caterva_storage_t storage;
        h_fill(tc, &params, &storage, NULL);
        uint8_t fill[8] = {7, 7, 7, 7, 7, 7, 7, 7};
        CHECK_OK(caterva_full(ctx, &params, &storage, fill, &arr));
        for (int i = 0; i < ndim; i++) {
            start[i] = shape[i] / 2;
            stop[i] = shape[i];
        }
        if (write_slice(ctx, arr, tc, start, stop, NULL, bshape)) {
            return 1;
        }
        int64_t all = nitems * tc->itemsize;
        uint8_t *buf = malloc((size_t)all);
        CHECK(buf != NULL);
        CHECK_OK(caterva_to_buffer(ctx, arr, buf, all));
        int64_t idx[CATERVA_MAX_DIM] = {0};
        int64_t j[CATERVA_MAX_DIM] = {0};
        do {
            uint64_t expected = h_get(fill, 0, tc->itemsize);
            if (inside(ndim, idx, start, stop)) {
                for (int i = 0; i < ndim; i++) {
                    j[i] = idx[i] - start[i];
                }
                expected = h_value(h_linear(ndim, bshape, j), tc->itemsize);
            }
            CHECK(h_get(buf, h_linear(ndim, shape, idx), tc->itemsize) == expected);
        } while (h_next_index(ndim, shape, idx));
        free(buf);
        CHECK_OK(caterva_free(ctx, &arr));
    }

    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

void suite_set_slice_buffer(void) {
    RUN_ALL_CASES(test_set_slice_buffer);
    RUN_ALL_CASES(test_set_slice_buffer_shapes);
}
