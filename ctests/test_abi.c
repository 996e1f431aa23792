/* Every size and offset of ABI.md, and the constants existing callers use. */
#include <stddef.h>

#include "harness.h"

#define SIZE(t, n) CHECK(sizeof(t) == (n))
#define OFF(t, f, n) CHECK(offsetof(t, f) == (n))

static int test_abi_layouts(const test_case_t *tc) {
    (void)tc;
    SIZE(caterva_config_t, 72);
    OFF(caterva_config_t, alloc, 0);
    OFF(caterva_config_t, free, 8);
    OFF(caterva_config_t, compcodec, 16);
    OFF(caterva_config_t, compmeta, 17);
    OFF(caterva_config_t, complevel, 18);
    OFF(caterva_config_t, splitmode, 20);
    OFF(caterva_config_t, usedict, 24);
    OFF(caterva_config_t, nthreads, 28);
    OFF(caterva_config_t, filters, 30);
    OFF(caterva_config_t, filtersmeta, 36);
    OFF(caterva_config_t, prefilter, 48);
    OFF(caterva_config_t, pparams, 56);
    OFF(caterva_config_t, udbtune, 64);

    SIZE(caterva_ctx_t, 8);
    OFF(caterva_ctx_t, cfg, 0);

    SIZE(caterva_metalayer_t, 24);
    OFF(caterva_metalayer_t, name, 0);
    OFF(caterva_metalayer_t, sdata, 8);
    OFF(caterva_metalayer_t, size, 16);

    SIZE(caterva_storage_t, 448);
    OFF(caterva_storage_t, chunkshape, 0);
    OFF(caterva_storage_t, blockshape, 32);
    OFF(caterva_storage_t, contiguous, 64);
    OFF(caterva_storage_t, urlpath, 72);
    OFF(caterva_storage_t, metalayers, 80);
    OFF(caterva_storage_t, nmetalayers, 440);

    SIZE(caterva_params_t, 80);
    OFF(caterva_params_t, itemsize, 0);
    OFF(caterva_params_t, shape, 8);
    OFF(caterva_params_t, ndim, 72);

    SIZE(struct chunk_cache_s, 16);
    OFF(struct chunk_cache_s, data, 0);
    OFF(struct chunk_cache_s, nchunk, 8);

    SIZE(caterva_array_t, 728);
    OFF(caterva_array_t, cfg, 0);
    OFF(caterva_array_t, sc, 8);
    OFF(caterva_array_t, shape, 16);
    OFF(caterva_array_t, chunkshape, 80);
    OFF(caterva_array_t, extshape, 112);
    OFF(caterva_array_t, blockshape, 176);
    OFF(caterva_array_t, extchunkshape, 208);
    OFF(caterva_array_t, nitems, 272);
    OFF(caterva_array_t, chunknitems, 280);
    OFF(caterva_array_t, extnitems, 288);
    OFF(caterva_array_t, blocknitems, 296);
    OFF(caterva_array_t, extchunknitems, 304);
    OFF(caterva_array_t, ndim, 312);
    OFF(caterva_array_t, itemsize, 313);
    OFF(caterva_array_t, nchunks, 320);
    OFF(caterva_array_t, chunk_cache, 328);
    OFF(caterva_array_t, item_array_strides, 344);
    OFF(caterva_array_t, item_chunk_strides, 408);
    OFF(caterva_array_t, item_extchunk_strides, 472);
    OFF(caterva_array_t, item_block_strides, 536);
    OFF(caterva_array_t, block_chunk_strides, 600);
    OFF(caterva_array_t, chunk_array_strides, 664);
    return 0;
}

static int test_abi_constants(const test_case_t *tc) {
    (void)tc;
    CHECK(CATERVA_VERSION_MAJOR == 0 && CATERVA_VERSION_MINOR == 5 && CATERVA_VERSION_RELEASE == 1);
    CHECK(CATERVA_SUCCEED == 0);
    CHECK(CATERVA_ERR_INVALID_ARGUMENT == 1);
    CHECK(CATERVA_ERR_BLOSC_FAILED == 2);
    CHECK(CATERVA_ERR_CONTAINER_FILLED == 3);
    CHECK(CATERVA_ERR_INVALID_STORAGE == 4);
    CHECK(CATERVA_ERR_NULL_POINTER == 5);
    CHECK(CATERVA_ERR_INVALID_INDEX == 5);
    CHECK(CATERVA_METALAYER_VERSION == 0);
    CHECK(CATERVA_MAX_DIM == 8);
    CHECK(CATERVA_MAX_METALAYERS == BLOSC2_MAX_METALAYERS - 1);

    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    CHECK(cfg.alloc == malloc && cfg.free == free);
    CHECK(cfg.compcodec == BLOSC_ZSTD && cfg.compmeta == 0 && cfg.complevel == 5);
    CHECK(cfg.splitmode == BLOSC_AUTO_SPLIT && cfg.usedict == 0 && cfg.nthreads == 1);
    CHECK(cfg.filters[5] == BLOSC_SHUFFLE && cfg.filters[0] == 0 && cfg.filtersmeta[5] == 0);
    CHECK(cfg.prefilter == NULL && cfg.pparams == NULL && cfg.udbtune == NULL);

    /* The context hands out its own copy of the config. */
    caterva_ctx_t *ctx = NULL;
    cfg.complevel = 3;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    CHECK(ctx->cfg != &cfg && ctx->cfg->complevel == 3);
    CHECK(ctx->cfg->alloc == malloc && ctx->cfg->free == free);
    CHECK_OK(caterva_ctx_free(&ctx));
    CHECK(ctx == NULL);
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

void suite_abi(void) {
    RUN_CASE(test_abi_layouts);
    RUN_CASE(test_abi_constants);
}
