/* Durability levels (extension): caterva_set_durability and
 * caterva_get_durability. A handle starts at CATERVA_DURABILITY_FULL, keeps
 * the level it is given through writes and reshapes, writes the same data
 * at both levels, and a handle opened later starts at FULL again (the level
 * is not stored in the file); bad levels and pointers are refused and
 * change nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static int expect_level(caterva_ctx_t *ctx, caterva_array_t *arr, int want) {
    int got = -1;
    CHECK_OK(caterva_get_durability(ctx, arr, &got));
    CHECK(got == want);
    return 0;
}

static int test_durability(const test_case_t *tc) {
    if (h_skip_disk_itemsize(tc)) {
        return 0;
    }
    caterva_ctx_t *ctx = NULL;
    char path[256];
    caterva_params_t params;
    caterva_storage_t storage;
    CHECK_OK(h_setup(tc, "durability", &ctx, path, &params, &storage));
    int64_t n = h_nitems(params.ndim, params.shape);
    int64_t size = n * params.itemsize;
    uint8_t *buf = malloc(size > 0 ? (size_t)size : 1);
    CHECK(buf != NULL);
    h_fill_buffer(buf, n, params.itemsize);

    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_zeros(ctx, &params, &storage, &arr));
    if (expect_level(ctx, arr, CATERVA_DURABILITY_FULL)) {
        return 1;
    }
    /* Refused, and nothing changes. */
    CHECK_RC(caterva_set_durability(ctx, arr, 2), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_set_durability(ctx, arr, -1), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_set_durability(ctx, NULL, CATERVA_DURABILITY_PROCESS), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_set_durability(NULL, arr, CATERVA_DURABILITY_PROCESS), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_get_durability(ctx, arr, NULL), CATERVA_ERR_NULL_POINTER);
    if (expect_level(ctx, arr, CATERVA_DURABILITY_FULL)) {
        return 1;
    }

    /* A write and a grow at PROCESS; the level stays. (A 0-dim array or
     * one with an empty axis has nothing to write.) */
    CHECK_OK(caterva_set_durability(ctx, arr, CATERVA_DURABILITY_PROCESS));
    if (expect_level(ctx, arr, CATERVA_DURABILITY_PROCESS)) {
        return 1;
    }
    int64_t start[CATERVA_MAX_DIM] = {0}, stop[CATERVA_MAX_DIM], bshape[CATERVA_MAX_DIM];
    for (int i = 0; i < params.ndim; i++) {
        stop[i] = params.shape[i];
        bshape[i] = params.shape[i];
    }
    if (params.ndim > 0 && n > 0) {
        CHECK_OK(caterva_set_slice_buffer(ctx, buf, bshape, size, start, stop, arr));
        int64_t grown[CATERVA_MAX_DIM];
        memcpy(grown, arr->shape, sizeof(grown));
        grown[0] += 1;
        CHECK_OK(caterva_resize(ctx, arr, grown, NULL));
        if (expect_level(ctx, arr, CATERVA_DURABILITY_PROCESS)) {
            return 1;
        }
    }
    if (tc->backend.persistent) {
        /* Reopened: the items written, and the default level again. */
        CHECK_OK(caterva_free(ctx, &arr));
        CHECK_OK(caterva_open(ctx, path, &arr));
        if (expect_level(ctx, arr, CATERVA_DURABILITY_FULL)) {
            return 1;
        }
    }
    int64_t asize = arr->nitems * arr->itemsize;
    uint8_t *out = malloc(asize > 0 ? (size_t)asize : 1);
    CHECK(out != NULL);
    CHECK_OK(caterva_to_buffer(ctx, arr, out, asize));
    /* Growing axis 0 at its end keeps the first n items where they were. */
    for (int64_t i = 0; params.ndim > 0 && i < n; i++) {
        CHECK(h_get(out, i, params.itemsize) == h_value(i, params.itemsize));
    }
    free(out);
    /* And a write at FULL after one at PROCESS. */
    CHECK_OK(caterva_set_durability(ctx, arr, CATERVA_DURABILITY_FULL));
    if (params.ndim > 0 && n > 0) {
        CHECK_OK(caterva_set_slice_buffer(ctx, buf, bshape, size, start, stop, arr));
    }
    if (expect_level(ctx, arr, CATERVA_DURABILITY_FULL)) {
        return 1;
    }
    CHECK_OK(caterva_free(ctx, &arr));
    if (tc->backend.persistent) {
        CHECK_OK(caterva_remove(ctx, path));
    }
    free(buf);
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* caterva_ctx_set_durability: the level of the arrays a context creates and
 * opens from then on (earlier handles keep theirs); bad levels and contexts
 * are refused and change nothing. */
static int test_ctx_durability(const test_case_t *tc) {
    if (h_skip_disk_itemsize(tc)) {
        return 0;
    }
    caterva_ctx_t *ctx = NULL;
    char path[256];
    caterva_params_t params;
    caterva_storage_t storage;
    CHECK_OK(h_setup(tc, "ctx_durability", &ctx, path, &params, &storage));
    caterva_array_t *before = NULL, *arr = NULL;
    CHECK_OK(caterva_zeros(ctx, &params, &storage, &before));
    CHECK_RC(caterva_ctx_set_durability(ctx, 2), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(strstr(caterva_last_error(), "durability level 2") != NULL);
    CHECK_RC(caterva_ctx_set_durability(NULL, CATERVA_DURABILITY_PROCESS), CATERVA_ERR_NULL_POINTER);
    CHECK_OK(caterva_ctx_set_durability(ctx, CATERVA_DURABILITY_PROCESS));
    if (expect_level(ctx, before, CATERVA_DURABILITY_FULL)) {
        return 1;
    }
    CHECK_OK(caterva_free(ctx, &before));
    int64_t n = h_nitems(params.ndim, params.shape);
    int64_t size = n * params.itemsize;
    uint8_t *buf = malloc(size > 0 ? (size_t)size : 1), *out = malloc(size > 0 ? (size_t)size : 1);
    CHECK(buf != NULL && out != NULL);
    h_fill_buffer(buf, n, params.itemsize);
    CHECK_OK(caterva_from_buffer(ctx, buf, size, &params, &storage, &arr));
    if (expect_level(ctx, arr, CATERVA_DURABILITY_PROCESS)) {
        return 1;
    }
    if (tc->backend.persistent) {
        CHECK_OK(caterva_free(ctx, &arr));
        CHECK_OK(caterva_open(ctx, path, &arr));
        if (expect_level(ctx, arr, CATERVA_DURABILITY_PROCESS)) {
            return 1;
        }
    }
    CHECK_OK(caterva_to_buffer(ctx, arr, out, size));
    CHECK(size == 0 || memcmp(buf, out, (size_t)size) == 0);
    CHECK_OK(caterva_free(ctx, &arr));
    if (tc->backend.persistent) {
        CHECK_OK(caterva_remove(ctx, path));
    }
    free(buf);
    free(out);
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

void suite_durability(void) {
    RUN_ALL_CASES(test_durability);
    RUN_ALL_CASES(test_ctx_durability);
}
