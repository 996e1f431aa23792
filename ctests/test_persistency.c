/* Persistent arrays: create on disk, free, caterva_open, check, caterva_remove. */
#include <stdlib.h>

#include "harness.h"

static int test_persistency(const test_case_t *tc) {
    if (!tc->backend.persistent) {
        return 0;
    }
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    char path[256];
    snprintf(path, sizeof(path), "%s", h_urlpath(tc, "persist"));
    CHECK_OK(caterva_remove(ctx, path));
    CHECK(!h_exists(path));

    caterva_params_t params;
    caterva_storage_t storage;
    h_fill(tc, &params, &storage, path);
    int8_t ndim = tc->shape.ndim;
    int64_t nitems = h_nitems(ndim, tc->shape.shape);
    int64_t nbytes = nitems * tc->itemsize;
    uint8_t *src = malloc((size_t)nbytes + 1);
    uint8_t *dst = malloc((size_t)nbytes + 1);
    CHECK(src != NULL && dst != NULL);
    h_fill_buffer(src, nitems, tc->itemsize);

    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_from_buffer(ctx, src, nbytes, &params, &storage, &arr));
    CHECK_OK(caterva_free(ctx, &arr));
    CHECK(arr == NULL);
    /* A contiguous frame is one file, a sparse frame a directory. */
    CHECK(h_exists(path));
    CHECK(h_is_dir(path) == !tc->backend.contiguous);

    /* Open it with another context: everything comes from the file. */
    caterva_config_t cfg2 = CATERVA_CONFIG_DEFAULTS;
    cfg2.complevel = 1;
    caterva_ctx_t *ctx2 = NULL;
    CHECK_OK(caterva_ctx_new(&cfg2, &ctx2));
    CHECK_OK(caterva_open(ctx2, path, &arr));
    CHECK(arr != NULL);
    CHECK(arr->ndim == ndim);
    CHECK(arr->itemsize == tc->itemsize);
    CHECK(arr->nitems == nitems);
    for (int i = 0; i < ndim; i++) {
        CHECK(arr->shape[i] == tc->shape.shape[i]);
        CHECK(arr->chunkshape[i] == tc->shape.chunkshape[i]);
        CHECK(arr->blockshape[i] == tc->shape.blockshape[i]);
    }
    for (int i = ndim; i < CATERVA_MAX_DIM; i++) {
        CHECK(arr->shape[i] == 1 && arr->chunkshape[i] == 1 && arr->blockshape[i] == 1);
    }
    memset(dst, 0, (size_t)nbytes + 1);
    CHECK_OK(caterva_to_buffer(ctx2, arr, dst, nbytes));
    CHECK(memcmp(src, dst, (size_t)nbytes) == 0);

    /* Opening the same path twice at once gives two independent readers. */
    caterva_array_t *arr2 = NULL;
    CHECK_OK(caterva_open(ctx, path, &arr2));
    CHECK(arr2 != NULL && arr2 != arr);
    CHECK(arr2->nitems == nitems);
    memset(dst, 0, (size_t)nbytes + 1);
    CHECK_OK(caterva_to_buffer(ctx, arr2, dst, nbytes));
    CHECK(memcmp(src, dst, (size_t)nbytes) == 0);
    CHECK_OK(caterva_free(ctx, &arr2));
    CHECK_OK(caterva_free(ctx2, &arr));
    CHECK_OK(caterva_ctx_free(&ctx2));

    /* Removing deletes it; a second remove of the missing path is fine. */
    CHECK_OK(caterva_remove(ctx, path));
    CHECK(!h_exists(path));
    CHECK_OK(caterva_remove(ctx, path));
    CHECK(!h_exists(path));
    /* And it can no longer be opened. */
    arr = (caterva_array_t *)&arr2;
    CHECK(caterva_open(ctx, path, &arr) != CATERVA_SUCCEED);
    CHECK(arr == (caterva_array_t *)&arr2);

    free(src);
    free(dst);
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* Changes made through a reopened array persist too. */
static int test_persistency_update(const test_case_t *tc) {
    if (h_skip_disk_itemsize(tc)) {
        return 0;
    }
    if (!tc->backend.persistent) {
        return 0;
    }
    int8_t ndim = tc->shape.ndim;
    int64_t nitems = h_nitems(ndim, tc->shape.shape);
    if (nitems == 0) {
        return 0;
    }
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    char path[256];
    snprintf(path, sizeof(path), "%s", h_urlpath(tc, "persist_update"));
    CHECK_OK(caterva_remove(ctx, path));
    caterva_params_t params;
    caterva_storage_t storage;
    h_fill(tc, &params, &storage, path);
    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_zeros(ctx, &params, &storage, &arr));
    CHECK_OK(caterva_free(ctx, &arr));

    /* Reopen, write the last item, close. */
    CHECK_OK(caterva_open(ctx, path, &arr));
    int64_t start[CATERVA_MAX_DIM] = {0};
    int64_t stop[CATERVA_MAX_DIM] = {0};
    int64_t one[CATERVA_MAX_DIM] = {0};
    for (int i = 0; i < ndim; i++) {
        start[i] = tc->shape.shape[i] - 1;
        stop[i] = tc->shape.shape[i];
        one[i] = 1;
    }
    uint8_t item[8] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};
    CHECK_OK(caterva_set_slice_buffer(ctx, item, one, tc->itemsize, start, stop, arr));
    CHECK_OK(caterva_free(ctx, &arr));

    /* Reopen and read everything back. */
    CHECK_OK(caterva_open(ctx, path, &arr));
    int64_t nbytes = nitems * tc->itemsize;
    uint8_t *buf = malloc((size_t)nbytes);
    CHECK(buf != NULL);
    CHECK_OK(caterva_to_buffer(ctx, arr, buf, nbytes));
    for (int64_t i = 0; i < nitems - 1; i++) {
        CHECK(h_get(buf, i, tc->itemsize) == 0);
    }
    CHECK(memcmp(buf + (nitems - 1) * tc->itemsize, item, tc->itemsize) == 0);
    free(buf);
    CHECK_OK(caterva_free(ctx, &arr));
    CHECK_OK(caterva_remove(ctx, path));
    CHECK(!h_exists(path));
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

void suite_persistency(void) {
    RUN_ALL_CASES(test_persistency);
    RUN_ALL_CASES(test_persistency_update);
}
