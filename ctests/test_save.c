/* caterva_save: a copy on disk with the same data, partitions, contiguity,
 * metalayers and vlmetalayers. */
#include <stdlib.h>

#include "harness.h"

static int check_layer(caterva_ctx_t *ctx, caterva_array_t *arr, const char *name, const void *data, int32_t size,
                       bool vl) {
    bool exists = false;
    caterva_metalayer_t m = {NULL, NULL, -1};
    if (vl) {
        CHECK_OK(caterva_vlmeta_exists(ctx, arr, name, &exists));
        CHECK(exists);
        CHECK_OK(caterva_vlmeta_get(ctx, arr, name, &m));
    } else {
        CHECK_OK(caterva_meta_exists(ctx, arr, name, &exists));
        CHECK(exists);
        CHECK_OK(caterva_meta_get(ctx, arr, name, &m));
    }
    CHECK(m.name != NULL && strcmp(m.name, name) == 0);
    CHECK(m.size == size);
    CHECK(m.sdata != NULL && memcmp(m.sdata, data, (size_t)size) == 0);
    free(m.name);
    free(m.sdata);
    return 0;
}

static int test_save(const test_case_t *tc) {
    /* Saving copies chunks whatever the itemsize: to save time, run itemsizes
     * 1 and 8 from memory and 8 from disk. */
    if (tc->itemsize == 2 || tc->itemsize == 4 || (tc->backend.persistent && tc->itemsize == 1)) {
        return 0;
    }
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    char *url = h_urlpath(tc, "save_src");
    char src_path[256] = {0};
    if (url != NULL) {
        snprintf(src_path, sizeof(src_path), "%s", url);
        CHECK_OK(caterva_remove(ctx, src_path));
    }
    char dst_path[64];
    snprintf(dst_path, sizeof(dst_path), "ctest_save_dst.%s", tc->backend.contiguous ? "b2frame" : "b2nd");
    CHECK_OK(caterva_remove(ctx, dst_path));

    caterva_params_t params;
    caterva_storage_t storage;
    h_fill(tc, &params, &storage, url != NULL ? src_path : NULL);
    uint8_t m1[] = {1, 2, 3, 4, 5, 6, 7};
    uint8_t m2[] = {0xFE, 0x00, 0xFD};
    storage.metalayers[0].name = "first";
    storage.metalayers[0].sdata = m1;
    storage.metalayers[0].size = (int32_t)sizeof(m1);
    storage.metalayers[1].name = "second";
    storage.metalayers[1].sdata = m2;
    storage.metalayers[1].size = (int32_t)sizeof(m2);
    storage.nmetalayers = 2;

    int8_t ndim = tc->shape.ndim;
    int64_t nitems = h_nitems(ndim, tc->shape.shape);
    int64_t nbytes = nitems * tc->itemsize;
    uint8_t *src = malloc((size_t)nbytes + 1);
    uint8_t *dst = malloc((size_t)nbytes + 1);
    CHECK(src != NULL && dst != NULL);
    h_fill_buffer(src, nitems, tc->itemsize);
    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_from_buffer(ctx, src, nbytes, &params, &storage, &arr));

    char vl1[] = "a variable-length layer";
    uint8_t vl2[300];
    for (int i = 0; i < 300; i++) {
        vl2[i] = (uint8_t)(i * 7);
    }
    caterva_metalayer_t vl = {"vl_text", (uint8_t *)vl1, (int32_t)sizeof(vl1)};
    CHECK_OK(caterva_vlmeta_add(ctx, arr, &vl));
    vl.name = "vl_bytes";
    vl.sdata = vl2;
    vl.size = (int32_t)sizeof(vl2);
    CHECK_OK(caterva_vlmeta_add(ctx, arr, &vl));

    CHECK_OK(caterva_save(ctx, arr, dst_path));
    CHECK(h_exists(dst_path));
    CHECK(h_is_dir(dst_path) == !tc->backend.contiguous);

    /* The source is unchanged by the save. */
    memset(dst, 0, (size_t)nbytes + 1);
    CHECK_OK(caterva_to_buffer(ctx, arr, dst, nbytes));
    CHECK(memcmp(src, dst, (size_t)nbytes) == 0);

    /* The copy is independent of the source: change the source's first item. */
    if (nitems > 0) {
        int64_t start[CATERVA_MAX_DIM] = {0};
        int64_t stop[CATERVA_MAX_DIM] = {0};
        int64_t one[CATERVA_MAX_DIM] = {0};
        for (int i = 0; i < ndim; i++) {
            stop[i] = 1;
            one[i] = 1;
        }
        uint8_t item[8] = {0x99, 0x99, 0x99, 0x99, 0x99, 0x99, 0x99, 0x99};
        CHECK_OK(caterva_set_slice_buffer(ctx, item, one, tc->itemsize, start, stop, arr));
    }
    CHECK_OK(caterva_free(ctx, &arr));

    CHECK_OK(caterva_open(ctx, dst_path, &arr));
    CHECK(arr->ndim == ndim && arr->itemsize == tc->itemsize && arr->nitems == nitems);
    for (int i = 0; i < ndim; i++) {
        CHECK(arr->shape[i] == tc->shape.shape[i]);
        CHECK(arr->chunkshape[i] == tc->shape.chunkshape[i]);
        CHECK(arr->blockshape[i] == tc->shape.blockshape[i]);
    }
    memset(dst, 0, (size_t)nbytes + 1);
    CHECK_OK(caterva_to_buffer(ctx, arr, dst, nbytes));
    CHECK(memcmp(src, dst, (size_t)nbytes) == 0);
    if (check_layer(ctx, arr, "first", m1, (int32_t)sizeof(m1), false) ||
        check_layer(ctx, arr, "second", m2, (int32_t)sizeof(m2), false) ||
        check_layer(ctx, arr, "vl_text", vl1, (int32_t)sizeof(vl1), true) ||
        check_layer(ctx, arr, "vl_bytes", vl2, (int32_t)sizeof(vl2), true)) {
        return 1;
    }
    bool exists = true;
    CHECK_OK(caterva_meta_exists(ctx, arr, "caterva", &exists));
    CHECK(exists);
    CHECK_OK(caterva_vlmeta_exists(ctx, arr, "nope", &exists));
    CHECK(!exists);
    CHECK_OK(caterva_free(ctx, &arr));

    CHECK_OK(caterva_remove(ctx, dst_path));
    CHECK(!h_exists(dst_path));
    if (url != NULL) {
        /* The source is still there, with its changed first item. */
        CHECK(h_exists(src_path));
        CHECK_OK(caterva_open(ctx, src_path, &arr));
        CHECK_OK(caterva_to_buffer(ctx, arr, dst, nbytes));
        if (nitems > 0) {
            CHECK(dst[0] == 0x99);
            CHECK(memcmp(src + tc->itemsize, dst + tc->itemsize, (size_t)(nbytes - tc->itemsize)) == 0);
        }
        CHECK_OK(caterva_free(ctx, &arr));
        CHECK_OK(caterva_remove(ctx, src_path));
        CHECK(!h_exists(src_path));
    }
    free(src);
    free(dst);
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* Saving over an existing saved array of the same kind replaces it. */
static int check_save_replaces(const test_case_t *tc) {
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    char dst_path[64];
    snprintf(dst_path, sizeof(dst_path), "ctest_save_twice.%s", tc->backend.contiguous ? "b2frame" : "b2nd");
    CHECK_OK(caterva_remove(ctx, dst_path));
    caterva_params_t params;
    caterva_storage_t storage;
    h_fill(tc, &params, &storage, NULL);
    caterva_array_t *zeros = NULL;
    caterva_array_t *ones = NULL;
    CHECK_OK(caterva_zeros(ctx, &params, &storage, &zeros));
    uint8_t one[8] = {1, 0, 0, 0, 0, 0, 0, 0};
    CHECK_OK(caterva_full(ctx, &params, &storage, one, &ones));
    CHECK_OK(caterva_save(ctx, zeros, dst_path));
    CHECK_OK(caterva_save(ctx, ones, dst_path));
    CHECK_OK(caterva_free(ctx, &zeros));
    CHECK_OK(caterva_free(ctx, &ones));

    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_open(ctx, dst_path, &arr));
    int64_t nitems = h_nitems(tc->shape.ndim, tc->shape.shape);
    CHECK(arr->nitems == nitems);
    int64_t nbytes = nitems * tc->itemsize;
    uint8_t *buf = malloc((size_t)nbytes + 1);
    CHECK(buf != NULL);
    CHECK_OK(caterva_to_buffer(ctx, arr, buf, nbytes));
    for (int64_t i = 0; i < nitems; i++) {
        CHECK(h_get(buf, i, tc->itemsize) == 1);
    }
    free(buf);
    CHECK_OK(caterva_free(ctx, &arr));
    CHECK_OK(caterva_remove(ctx, dst_path));
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* One ragged 2-D shape and one 4-D shape, contiguous and sparse. */
static int test_save_replaces(const test_case_t *tc) {
    (void)tc;
    for (size_t k = 0; k < NSHAPES; k++) {
        if (SHAPES[k].ndim != 2 && SHAPES[k].ndim != 4) {
            continue;
        }
        for (int b = 0; b < 2; b++) {
            test_case_t c = {2, SHAPES[k], BACKENDS[b]};
            if (check_save_replaces(&c)) {
                return 1;
            }
        }
    }
    return 0;
}

/* Saving a persistent array onto its own path keeps its data. */
static int test_save_onto_itself(const test_case_t *tc) {
    (void)tc;
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    for (int contiguous = 0; contiguous < 2; contiguous++) {
        char path[64];
        snprintf(path, sizeof(path), "ctest_save_self.%s", contiguous ? "b2frame" : "b2nd");
        CHECK_OK(caterva_remove(ctx, path));
        test_case_t c = {4, SHAPES[3], {contiguous, true}};
        caterva_params_t params;
        caterva_storage_t storage;
        h_fill(&c, &params, &storage, path);
        int64_t nitems = h_nitems(c.shape.ndim, c.shape.shape);
        int64_t nbytes = nitems * c.itemsize;
        uint8_t *src = malloc((size_t)nbytes);
        uint8_t *dst = malloc((size_t)nbytes);
        CHECK(src != NULL && dst != NULL);
        h_fill_buffer(src, nitems, c.itemsize);
        caterva_array_t *arr = NULL;
        CHECK_OK(caterva_from_buffer(ctx, src, nbytes, &params, &storage, &arr));
        /* Either outcome is acceptable, but no data may be lost. */
        int rc = caterva_save(ctx, arr, path);
        (void)rc;
        memset(dst, 0, (size_t)nbytes);
        CHECK_OK(caterva_to_buffer(ctx, arr, dst, nbytes));
        CHECK(memcmp(src, dst, (size_t)nbytes) == 0);
        CHECK_OK(caterva_free(ctx, &arr));
        CHECK_OK(caterva_open(ctx, path, &arr));
        memset(dst, 0, (size_t)nbytes);
        CHECK_OK(caterva_to_buffer(ctx, arr, dst, nbytes));
        CHECK(memcmp(src, dst, (size_t)nbytes) == 0);
        CHECK_OK(caterva_free(ctx, &arr));
        CHECK_OK(caterva_remove(ctx, path));
        free(src);
        free(dst);
    }
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

void suite_save(void) {
    RUN_ALL_CASES(test_save);
    RUN_CASE(test_save_replaces);
    RUN_CASE(test_save_onto_itself);
}
