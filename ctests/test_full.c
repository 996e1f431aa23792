/* caterva_full: every item equals the fill value. */
#include <stdlib.h>

#include "harness.h"

static int check_full(const test_case_t *tc, const uint8_t *fill) {
    if (h_skip_disk_itemsize(tc)) {
        return 0;
    }
    caterva_ctx_t *ctx = NULL;
    char path[256];
    caterva_params_t params;
    caterva_storage_t storage;
    CHECK_OK(h_setup(tc, "full", &ctx, path, &params, &storage));

    uint8_t value[8];
    memcpy(value, fill, tc->itemsize);
    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_full(ctx, &params, &storage, value, &arr));
    CHECK(arr != NULL);
    /* The fill value is read, not kept. */
    memset(value, 0, sizeof(value));
    CHECK(arr->ndim == tc->shape.ndim && arr->itemsize == tc->itemsize);
    for (int i = 0; i < tc->shape.ndim; i++) {
        CHECK(arr->shape[i] == tc->shape.shape[i]);
    }
    int64_t nitems = h_nitems(tc->shape.ndim, tc->shape.shape);
    CHECK(arr->nitems == nitems);

    int64_t nbytes = nitems * tc->itemsize;
    uint8_t *buf = malloc((size_t)nbytes + 1);
    CHECK(buf != NULL);
    memset(buf, 0, (size_t)nbytes + 1);
    CHECK_OK(caterva_to_buffer(ctx, arr, buf, nbytes));
    for (int64_t i = 0; i < nitems; i++) {
        CHECK(memcmp(buf + i * tc->itemsize, fill, tc->itemsize) == 0);
    }
    free(buf);
    CHECK_OK(caterva_free(ctx, &arr));

    if (storage.urlpath != NULL) {
        /* The values persist. */
        CHECK_OK(caterva_open(ctx, path, &arr));
        CHECK(arr->nitems == nitems);
        buf = malloc((size_t)nbytes + 1);
        CHECK(buf != NULL);
        CHECK_OK(caterva_to_buffer(ctx, arr, buf, nbytes));
        for (int64_t i = 0; i < nitems; i++) {
            CHECK(memcmp(buf + i * tc->itemsize, fill, tc->itemsize) == 0);
        }
        free(buf);
        CHECK_OK(caterva_free(ctx, &arr));
        CHECK_OK(caterva_remove(ctx, path));
    }
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* Bytes 1..itemsize: every byte of an item differs. */
static int test_full_ascending(const test_case_t *tc) {
    const uint8_t fill[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    return check_full(tc, fill);
}

/* All bits set (e.g. -1 as a signed integer). */
static int test_full_ones(const test_case_t *tc) {
    if (tc->backend.persistent) {
        return 0; /* test_full_ascending covers the disk */
    }
    const uint8_t fill[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
    return check_full(tc, fill);
}

/* A fill value of zeros. */
static int test_full_zero(const test_case_t *tc) {
    if (tc->backend.persistent) {
        return 0; /* test_full_ascending covers the disk */
    }
    const uint8_t fill[8] = {0};
    return check_full(tc, fill);
}

void suite_full(void) {
    RUN_ALL_CASES(test_full_ascending);
    RUN_ALL_CASES(test_full_ones);
    RUN_ALL_CASES(test_full_zero);
}
