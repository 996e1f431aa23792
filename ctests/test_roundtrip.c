/* caterva_from_buffer then caterva_to_buffer gives the same bytes. */
#include <stdlib.h>

#include "harness.h"

static int test_roundtrip(const test_case_t *tc) {
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    char *url = h_urlpath(tc, "roundtrip");
    char path[256] = {0};
    if (url != NULL) {
        snprintf(path, sizeof(path), "%s", url);
        CHECK_OK(caterva_remove(ctx, path));
    }
    caterva_params_t params;
    caterva_storage_t storage;
    h_fill(tc, &params, &storage, url != NULL ? path : NULL);

    int64_t nitems = h_nitems(tc->shape.ndim, tc->shape.shape);
    int64_t nbytes = nitems * tc->itemsize;
    uint8_t *src = malloc((size_t)nbytes + 1);
    uint8_t *dst = malloc((size_t)nbytes + 1);
    CHECK(src != NULL && dst != NULL);
    h_fill_buffer(src, nitems, tc->itemsize);

    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_from_buffer(ctx, src, nbytes, &params, &storage, &arr));
    CHECK(arr != NULL);
    CHECK(arr->ndim == tc->shape.ndim && arr->itemsize == tc->itemsize && arr->nitems == nitems);
    for (int i = 0; i < tc->shape.ndim; i++) {
        CHECK(arr->shape[i] == tc->shape.shape[i]);
        CHECK(arr->chunkshape[i] == tc->shape.chunkshape[i]);
        CHECK(arr->blockshape[i] == tc->shape.blockshape[i]);
    }

    memset(dst, 0xC3, (size_t)nbytes + 1);
    CHECK_OK(caterva_to_buffer(ctx, arr, dst, nbytes));
    CHECK(memcmp(src, dst, (size_t)nbytes) == 0);
    CHECK(dst[nbytes] == 0xC3);
    for (int64_t i = 0; i < nitems; i++) {
        CHECK(h_get(dst, i, tc->itemsize) == h_value(i, tc->itemsize));
    }

    /* A larger buffer is fine too; only the array's bytes are written. */
    uint8_t *big = malloc((size_t)nbytes + 16);
    CHECK(big != NULL);
    memset(big, 0x5A, (size_t)nbytes + 16);
    CHECK_OK(caterva_to_buffer(ctx, arr, big, nbytes + 16));
    CHECK(memcmp(src, big, (size_t)nbytes) == 0);
    for (int k = 0; k < 16; k++) {
        CHECK(big[nbytes + k] == 0x5A);
    }
    free(big);

    /* Reading twice gives the same result (no state kept between reads). */
    memset(dst, 0, (size_t)nbytes);
    CHECK_OK(caterva_to_buffer(ctx, arr, dst, nbytes));
    CHECK(memcmp(src, dst, (size_t)nbytes) == 0);

    CHECK_OK(caterva_free(ctx, &arr));
    free(src);
    free(dst);
    if (url != NULL) {
        CHECK_OK(caterva_remove(ctx, path));
        CHECK(!h_exists(path));
    }
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* Two configs (a different codec and level, several threads) give the same data. */
static int test_roundtrip_configs(const test_case_t *tc) {
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    cfg.compcodec = BLOSC_LZ4;
    cfg.complevel = 9;
    cfg.nthreads = 2;
    cfg.filters[BLOSC2_MAX_FILTERS - 1] = BLOSC_BITSHUFFLE;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    caterva_params_t params;
    caterva_storage_t storage;
    h_fill(tc, &params, &storage, NULL);
    int64_t nitems = h_nitems(tc->shape.ndim, tc->shape.shape);
    int64_t nbytes = nitems * tc->itemsize;
    uint8_t *src = malloc((size_t)nbytes + 1);
    uint8_t *dst = malloc((size_t)nbytes + 1);
    CHECK(src != NULL && dst != NULL);
    h_fill_buffer(src, nitems, tc->itemsize);
    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_from_buffer(ctx, src, nbytes, &params, &storage, &arr));
    CHECK_OK(caterva_to_buffer(ctx, arr, dst, nbytes));
    CHECK(memcmp(src, dst, (size_t)nbytes) == 0);
    CHECK_OK(caterva_free(ctx, &arr));
    free(src);
    free(dst);
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

void suite_roundtrip(void) {
    RUN_ALL_CASES(test_roundtrip);
    RUN_ALL_CASES(test_roundtrip_configs);
}
