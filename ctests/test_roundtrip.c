/* caterva_from_buffer then caterva_to_buffer gives the same bytes. */
#include <stdlib.h>

#include "harness.h"

static int test_roundtrip(const test_case_t *tc) {
    if (h_skip_disk_itemsize(tc)) {
        return 0;
    }
    caterva_ctx_t *ctx = NULL;
    char path[256];
    caterva_params_t params;
    caterva_storage_t storage;
    CHECK_OK(h_setup(tc, "roundtrip", &ctx, path, &params, &storage));

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

    /* A larger buffer is fine too; only the array's bytes are written (and
     * reading again gives the same result). */
    uint8_t *big = malloc((size_t)nbytes + 16);
    CHECK(big != NULL);
    memset(big, 0x5A, (size_t)nbytes + 16);
    CHECK_OK(caterva_to_buffer(ctx, arr, big, nbytes + 16));
    CHECK(memcmp(src, big, (size_t)nbytes) == 0);
    for (int k = 0; k < 16; k++) {
        CHECK(big[nbytes + k] == 0x5A);
    }
    free(big);

    CHECK_OK(caterva_free(ctx, &arr));
    free(src);
    free(dst);
    if (storage.urlpath != NULL) {
        CHECK_OK(caterva_remove(ctx, path));
        CHECK(!h_exists(path));
    }
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* Two configs (a different codec and level, several threads) give the same data. */
static int test_roundtrip_configs(const test_case_t *tc) {
    if (tc->backend.persistent || tc->backend.contiguous) {
        return 0; /* the codec is independent of the storage: one backend is enough */
    }
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

/* Item sizes beyond 8 bytes, up to the largest (255). */
static int test_large_itemsize(const test_case_t *tc) {
    (void)tc;
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    const uint8_t sizes[3] = {16, 17, 255};
    for (int k = 0; k < 3; k++) {
        for (int contiguous = 0; contiguous < 2; contiguous++) {
            uint8_t itemsize = sizes[k];
            caterva_params_t params = {0};
            caterva_storage_t storage = {0};
            params.itemsize = itemsize;
            params.ndim = 2;
            params.shape[0] = 7;
            params.shape[1] = 5;
            storage.chunkshape[0] = 4;
            storage.chunkshape[1] = 3;
            storage.blockshape[0] = 2;
            storage.blockshape[1] = 2;
            storage.contiguous = contiguous;
            int64_t nbytes = 35 * (int64_t)itemsize;
            uint8_t *src = malloc((size_t)nbytes);
            uint8_t *dst = malloc((size_t)nbytes);
            CHECK(src != NULL && dst != NULL);
            for (int64_t i = 0; i < nbytes; i++) {
                src[i] = (uint8_t)(i * 131 + i / 7);
            }
            caterva_array_t *arr = NULL;
            CHECK_OK(caterva_from_buffer(ctx, src, nbytes, &params, &storage, &arr));
            CHECK(arr->itemsize == itemsize);
            CHECK_OK(caterva_to_buffer(ctx, arr, dst, nbytes));
            CHECK(memcmp(src, dst, (size_t)nbytes) == 0);
            /* Rows 2..5, columns 1..4. */
            int64_t start[2] = {2, 1}, stop[2] = {5, 4}, bshape[2] = {3, 3};
            memset(dst, 0, (size_t)nbytes);
            CHECK_OK(caterva_get_slice_buffer(ctx, arr, start, stop, dst, bshape, 9 * (int64_t)itemsize));
            for (int r = 0; r < 3; r++) {
                for (int c = 0; c < 3; c++) {
                    int64_t from = ((2 + r) * 5 + 1 + c) * (int64_t)itemsize;
                    CHECK(memcmp(dst + (r * 3 + c) * itemsize, src + from, itemsize) == 0);
                }
            }
            CHECK_OK(caterva_free(ctx, &arr));

            /* full with an itemsize-byte pattern. */
            uint8_t fill[255];
            for (int i = 0; i < itemsize; i++) {
                fill[i] = (uint8_t)(255 - i);
            }
            CHECK_OK(caterva_full(ctx, &params, &storage, fill, &arr));
            CHECK_OK(caterva_to_buffer(ctx, arr, dst, nbytes));
            for (int i = 0; i < 35; i++) {
                CHECK(memcmp(dst + i * itemsize, fill, itemsize) == 0);
            }
            CHECK_OK(caterva_free(ctx, &arr));
            free(src);
            free(dst);
        }
    }
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* Arrays stay valid after the context that made them is freed. */
static int test_array_outlives_context(const test_case_t *tc) {
    (void)tc;
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    cfg.complevel = 7;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    caterva_params_t params = {0};
    caterva_storage_t storage = {0};
    params.itemsize = 2;
    params.ndim = 2;
    params.shape[0] = 9;
    params.shape[1] = 6;
    storage.chunkshape[0] = 4;
    storage.chunkshape[1] = 4;
    storage.blockshape[0] = 2;
    storage.blockshape[1] = 3;
    uint8_t src[9 * 6 * 2], dst[9 * 6 * 2];
    h_fill_buffer(src, 54, 2);
    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_from_buffer(ctx, src, (int64_t)sizeof(src), &params, &storage, &arr));
    CHECK_OK(caterva_ctx_free(&ctx));
    CHECK(ctx == NULL);
    /* The array's own config is still readable. */
    CHECK(arr->cfg != NULL && arr->cfg->complevel == 7);
    CHECK(arr->cfg->alloc == malloc && arr->cfg->free == free);

    caterva_ctx_t *ctx2 = NULL;
    caterva_config_t cfg2 = CATERVA_CONFIG_DEFAULTS;
    CHECK_OK(caterva_ctx_new(&cfg2, &ctx2));
    CHECK_OK(caterva_to_buffer(ctx2, arr, dst, (int64_t)sizeof(dst)));
    CHECK(memcmp(src, dst, sizeof(src)) == 0);
    /* Writing through another context works too. */
    int64_t start[2] = {8, 5}, stop[2] = {9, 6}, one[2] = {1, 1};
    uint8_t item[2] = {0xAB, 0xCD};
    CHECK_OK(caterva_set_slice_buffer(ctx2, item, one, 2, start, stop, arr));
    CHECK_OK(caterva_to_buffer(ctx2, arr, dst, (int64_t)sizeof(dst)));
    CHECK(memcmp(src, dst, sizeof(src) - 2) == 0);
    CHECK(dst[sizeof(dst) - 2] == 0xAB && dst[sizeof(dst) - 1] == 0xCD);
    CHECK_OK(caterva_free(ctx2, &arr));
    CHECK_OK(caterva_ctx_free(&ctx2));
    return 0;
}

void suite_roundtrip(void) {
    RUN_ALL_CASES(test_roundtrip);
    RUN_ALL_CASES(test_roundtrip_configs);
    RUN_CASE(test_large_itemsize);
    RUN_CASE(test_array_outlives_context);
}
