/* Bad input: NULL pointers, invalid parameters and storages, out-of-range
 * slices, undersized buffers, missing or corrupt files. Every failure must
 * return the documented code, leave outputs and arrays as they were, and
 * leave nothing on disk. */
#include <stdlib.h>

#include "harness.h"

/* A pointer value that no call may write into *array on failure. */
static int sentinel_object;
#define SENTINEL_ARRAY ((caterva_array_t *)&sentinel_object)

static caterva_ctx_t *new_ctx(void) {
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    if (caterva_ctx_new(&cfg, &ctx) != CATERVA_SUCCEED) {
        return NULL;
    }
    return ctx;
}


/* ---- NULL pointers ---------------------------------------------------- */

/* Configurations outside their documented ranges are refused by caterva_ctx_new. */
static int test_invalid_config(const test_case_t *tc) {
    (void)tc;
    caterva_ctx_t *ctx = (caterva_ctx_t *)&sentinel_object;
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    cfg.complevel = 10;
    CHECK(caterva_ctx_new(&cfg, &ctx) != CATERVA_SUCCEED);
    CHECK(ctx == (caterva_ctx_t *)&sentinel_object);
    cfg = CATERVA_CONFIG_DEFAULTS;
    cfg.nthreads = 0;
    CHECK(caterva_ctx_new(&cfg, &ctx) != CATERVA_SUCCEED);
    CHECK(ctx == (caterva_ctx_t *)&sentinel_object);
    cfg.nthreads = -1;
    CHECK(caterva_ctx_new(&cfg, &ctx) != CATERVA_SUCCEED);
    CHECK(ctx == (caterva_ctx_t *)&sentinel_object);
    return 0;
}

static int test_null_context_functions(const test_case_t *tc) {
    (void)tc;
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = (caterva_ctx_t *)&sentinel_object;
    CHECK_RC(caterva_ctx_new(NULL, &ctx), CATERVA_ERR_NULL_POINTER);
    CHECK(ctx == (caterva_ctx_t *)&sentinel_object);
    CHECK_RC(caterva_ctx_new(&cfg, NULL), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_ctx_free(NULL), CATERVA_ERR_NULL_POINTER);
    /* Freeing a NULL context is fine. */
    ctx = NULL;
    CHECK_OK(caterva_ctx_free(&ctx));
    CHECK(ctx == NULL);
    return 0;
}

static int test_null_constructors(const test_case_t *tc) {
    (void)tc;
    caterva_ctx_t *ctx = new_ctx();
    CHECK(ctx != NULL);
    caterva_params_t params;
    caterva_storage_t storage;
    h_small_params(&params, &storage, NULL, true);
    uint8_t buf[10 * 8 * 4] = {0};
    uint8_t fill[4] = {1, 2, 3, 4};
    caterva_array_t *arr = SENTINEL_ARRAY;

    typedef int (*ctor_t)(caterva_ctx_t *, caterva_params_t *, caterva_storage_t *, caterva_array_t **);
    ctor_t ctors[3] = {caterva_uninit, caterva_empty, caterva_zeros};
    for (int k = 0; k < 3; k++) {
        CHECK_RC(ctors[k](NULL, &params, &storage, &arr), CATERVA_ERR_NULL_POINTER);
        CHECK_RC(ctors[k](ctx, NULL, &storage, &arr), CATERVA_ERR_NULL_POINTER);
        CHECK_RC(ctors[k](ctx, &params, NULL, &arr), CATERVA_ERR_NULL_POINTER);
        CHECK_RC(ctors[k](ctx, &params, &storage, NULL), CATERVA_ERR_NULL_POINTER);
        CHECK(arr == SENTINEL_ARRAY);
    }
    CHECK_RC(caterva_full(NULL, &params, &storage, fill, &arr), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_full(ctx, NULL, &storage, fill, &arr), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_full(ctx, &params, NULL, fill, &arr), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_full(ctx, &params, &storage, NULL, &arr), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_full(ctx, &params, &storage, fill, NULL), CATERVA_ERR_NULL_POINTER);
    CHECK(arr == SENTINEL_ARRAY);
    int64_t n = (int64_t)sizeof(buf);
    CHECK_RC(caterva_from_buffer(NULL, buf, n, &params, &storage, &arr), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_from_buffer(ctx, NULL, n, &params, &storage, &arr), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_from_buffer(ctx, buf, n, NULL, &storage, &arr), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_from_buffer(ctx, buf, n, &params, NULL, &arr), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_from_buffer(ctx, buf, n, &params, &storage, NULL), CATERVA_ERR_NULL_POINTER);
    CHECK(arr == SENTINEL_ARRAY);
    /* A NULL storage.urlpath is fine (in memory); a NULL metalayer name is not. */
    storage.metalayers[0].name = NULL;
    storage.metalayers[0].sdata = fill;
    storage.metalayers[0].size = 4;
    storage.nmetalayers = 1;
    CHECK_RC(caterva_zeros(ctx, &params, &storage, &arr), CATERVA_ERR_NULL_POINTER);
    CHECK(arr == SENTINEL_ARRAY);
    /* Nor is NULL content with a non-zero size. */
    storage.metalayers[0].name = "meta";
    storage.metalayers[0].sdata = NULL;
    CHECK_RC(caterva_zeros(ctx, &params, &storage, &arr), CATERVA_ERR_NULL_POINTER);
    CHECK(arr == SENTINEL_ARRAY);
    /* Entries past nmetalayers are not looked at. */
    storage.nmetalayers = 0;
    arr = NULL;
    CHECK_OK(caterva_zeros(ctx, &params, &storage, &arr));
    CHECK(arr != NULL);
    CHECK_OK(caterva_free(ctx, &arr));
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

static int test_null_array_functions(const test_case_t *tc) {
    (void)tc;
    caterva_ctx_t *ctx = new_ctx();
    CHECK(ctx != NULL);
    caterva_params_t params;
    caterva_storage_t storage;
    h_small_params(&params, &storage, NULL, true);
    uint8_t data[10 * 8 * 4];
    h_fill_buffer(data, 80, 4);
    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_from_buffer(ctx, data, (int64_t)sizeof(data), &params, &storage, &arr));

    /* free */
    CHECK_RC(caterva_free(NULL, &arr), CATERVA_ERR_NULL_POINTER);
    CHECK(arr != NULL);
    CHECK_RC(caterva_free(ctx, NULL), CATERVA_ERR_NULL_POINTER);
    caterva_array_t *none = NULL;
    CHECK_OK(caterva_free(ctx, &none));

    /* to_buffer */
    uint8_t out[10 * 8 * 4];
    memset(out, 0xAB, sizeof(out));
    int64_t n = (int64_t)sizeof(out);
    CHECK_RC(caterva_to_buffer(NULL, arr, out, n), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_to_buffer(ctx, NULL, out, n), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_to_buffer(ctx, arr, NULL, n), CATERVA_ERR_NULL_POINTER);
    for (size_t i = 0; i < sizeof(out); i++) {
        CHECK(out[i] == 0xAB);
    }

    /* get/set_slice_buffer */
    int64_t start[2] = {1, 1}, stop[2] = {3, 3}, bshape[2] = {2, 2};
    int64_t bsize = 2 * 2 * 4;
    CHECK_RC(caterva_get_slice_buffer(NULL, arr, start, stop, out, bshape, bsize), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_get_slice_buffer(ctx, NULL, start, stop, out, bshape, bsize), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_get_slice_buffer(ctx, arr, NULL, stop, out, bshape, bsize), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_get_slice_buffer(ctx, arr, start, NULL, out, bshape, bsize), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_get_slice_buffer(ctx, arr, start, stop, NULL, bshape, bsize), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_get_slice_buffer(ctx, arr, start, stop, out, NULL, bsize), CATERVA_ERR_NULL_POINTER);
    for (size_t i = 0; i < sizeof(out); i++) {
        CHECK(out[i] == 0xAB);
    }
    CHECK_RC(caterva_set_slice_buffer(NULL, out, bshape, bsize, start, stop, arr), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_set_slice_buffer(ctx, NULL, bshape, bsize, start, stop, arr), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_set_slice_buffer(ctx, out, NULL, bsize, start, stop, arr), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_set_slice_buffer(ctx, out, bshape, bsize, NULL, stop, arr), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_set_slice_buffer(ctx, out, bshape, bsize, start, NULL, arr), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_set_slice_buffer(ctx, out, bshape, bsize, start, stop, NULL), CATERVA_ERR_NULL_POINTER);

    /* to_cframe / from_cframe */
    uint8_t *cframe = (uint8_t *)&sentinel_object;
    int64_t clen = -5;
    bool nf = true;
    CHECK_RC(caterva_to_cframe(NULL, arr, &cframe, &clen, &nf), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_to_cframe(ctx, NULL, &cframe, &clen, &nf), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_to_cframe(ctx, arr, NULL, &clen, &nf), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_to_cframe(ctx, arr, &cframe, NULL, &nf), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_to_cframe(ctx, arr, &cframe, &clen, NULL), CATERVA_ERR_NULL_POINTER);
    CHECK(cframe == (uint8_t *)&sentinel_object && clen == -5 && nf == true);
    CHECK_OK(caterva_to_cframe(ctx, arr, &cframe, &clen, &nf));
    caterva_array_t *other = SENTINEL_ARRAY;
    CHECK_RC(caterva_from_cframe(NULL, cframe, clen, true, &other), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_from_cframe(ctx, NULL, clen, true, &other), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_from_cframe(ctx, cframe, clen, true, NULL), CATERVA_ERR_NULL_POINTER);
    CHECK(other == SENTINEL_ARRAY);
    if (nf) {
        free(cframe);
    }

    /* open / save / remove */
    char path[] = "ctest_bad_null.b2frame";
    CHECK_OK(caterva_remove(ctx, path));
    CHECK_RC(caterva_save(NULL, arr, path), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_save(ctx, NULL, path), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_save(ctx, arr, NULL), CATERVA_ERR_NULL_POINTER);
    CHECK(!h_exists(path));
    CHECK_OK(caterva_save(ctx, arr, path));
    CHECK_RC(caterva_open(NULL, path, &other), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_open(ctx, NULL, &other), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_open(ctx, path, NULL), CATERVA_ERR_NULL_POINTER);
    CHECK(other == SENTINEL_ARRAY);
    CHECK_RC(caterva_remove(NULL, path), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_remove(ctx, NULL), CATERVA_ERR_NULL_POINTER);
    CHECK(h_exists(path));
    CHECK_OK(caterva_remove(ctx, path));
    CHECK(!h_exists(path));

    /* from_schunk */
    CHECK_RC(caterva_from_schunk(NULL, arr->sc, &other), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_from_schunk(ctx, NULL, &other), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_from_schunk(ctx, arr->sc, NULL), CATERVA_ERR_NULL_POINTER);
    CHECK(other == SENTINEL_ARRAY);

    /* metalayers */
    uint8_t content[2] = {1, 2};
    caterva_metalayer_t m = {"m", content, 2};
    caterva_metalayer_t got = {(char *)&sentinel_object, content, 77};
    bool exists = true;
    CHECK_RC(caterva_vlmeta_add(NULL, arr, &m), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_vlmeta_add(ctx, NULL, &m), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_vlmeta_add(ctx, arr, NULL), CATERVA_ERR_NULL_POINTER);
    m.name = NULL;
    CHECK_RC(caterva_vlmeta_add(ctx, arr, &m), CATERVA_ERR_NULL_POINTER);
    m.name = "m";
    m.sdata = NULL;
    CHECK_RC(caterva_vlmeta_add(ctx, arr, &m), CATERVA_ERR_NULL_POINTER);
    m.sdata = content;
    CHECK_OK(caterva_vlmeta_exists(ctx, arr, "m", &exists));
    CHECK(!exists);
    CHECK_OK(caterva_vlmeta_add(ctx, arr, &m));
    CHECK_RC(caterva_vlmeta_update(NULL, arr, &m), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_vlmeta_update(ctx, NULL, &m), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_vlmeta_update(ctx, arr, NULL), CATERVA_ERR_NULL_POINTER);
    m.name = NULL;
    CHECK_RC(caterva_vlmeta_update(ctx, arr, &m), CATERVA_ERR_NULL_POINTER);
    m.name = "m";
    m.sdata = NULL;
    CHECK_RC(caterva_vlmeta_update(ctx, arr, &m), CATERVA_ERR_NULL_POINTER);
    m.sdata = content;
    CHECK_RC(caterva_vlmeta_get(NULL, arr, "m", &got), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_vlmeta_get(ctx, NULL, "m", &got), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_vlmeta_get(ctx, arr, NULL, &got), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_vlmeta_get(ctx, arr, "m", NULL), CATERVA_ERR_NULL_POINTER);
    CHECK(got.name == (char *)&sentinel_object && got.sdata == content && got.size == 77);
    exists = false;
    CHECK_RC(caterva_vlmeta_exists(NULL, arr, "m", &exists), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_vlmeta_exists(ctx, NULL, "m", &exists), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_vlmeta_exists(ctx, arr, NULL, &exists), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_vlmeta_exists(ctx, arr, "m", NULL), CATERVA_ERR_NULL_POINTER);
    CHECK(exists == false);
    /* The vlmetalayer is intact after all the failed updates. */
    CHECK_OK(caterva_vlmeta_get(ctx, arr, "m", &got));
    CHECK(got.size == 2 && got.sdata[0] == 1 && got.sdata[1] == 2);
    free(got.name);
    free(got.sdata);

    got.name = (char *)&sentinel_object;
    got.sdata = content;
    got.size = 77;
    CHECK_RC(caterva_meta_get(NULL, arr, "caterva", &got), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_meta_get(ctx, NULL, "caterva", &got), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_meta_get(ctx, arr, NULL, &got), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_meta_get(ctx, arr, "caterva", NULL), CATERVA_ERR_NULL_POINTER);
    CHECK(got.name == (char *)&sentinel_object && got.sdata == content && got.size == 77);
    CHECK_RC(caterva_meta_exists(NULL, arr, "caterva", &exists), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_meta_exists(ctx, NULL, "caterva", &exists), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_meta_exists(ctx, arr, NULL, &exists), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_meta_exists(ctx, arr, "caterva", NULL), CATERVA_ERR_NULL_POINTER);
    CHECK(exists == false);
    CHECK_RC(caterva_meta_update(NULL, arr, &m), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_meta_update(ctx, NULL, &m), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_meta_update(ctx, arr, NULL), CATERVA_ERR_NULL_POINTER);
    m.name = NULL;
    CHECK_RC(caterva_meta_update(ctx, arr, &m), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_print_meta(NULL), CATERVA_ERR_NULL_POINTER);

    /* The array is intact after all this. */
    memset(out, 0, sizeof(out));
    CHECK_OK(caterva_to_buffer(ctx, arr, out, n));
    CHECK(memcmp(out, data, sizeof(data)) == 0);
    CHECK_OK(caterva_free(ctx, &arr));
    CHECK(arr == NULL);
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* ---- Invalid parameters and storages -------------------------------- */

/* Creating with params/storage must fail with rc, leave *array alone and
 * leave nothing on disk, whatever the constructor and backend. */
static int expect_create_fails(caterva_ctx_t *ctx, caterva_params_t *params, caterva_storage_t *storage, int rc) {
    static const char *paths[2] = {"ctest_bad_create.b2nd", "ctest_bad_create.b2frame"};
    uint8_t fill[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    uint8_t *buf = calloc(4096, 1);
    CHECK(buf != NULL);
    for (int b = 0; b < 4; b++) {
        storage->contiguous = b % 2;
        char path[64];
        snprintf(path, sizeof(path), "%s", paths[b % 2]);
        storage->urlpath = b >= 2 ? path : NULL;
        if (b >= 2) {
            CHECK_OK(caterva_remove(ctx, path));
        }
        for (int k = 0; k < 5; k++) {
            caterva_array_t *arr = SENTINEL_ARRAY;
            int got;
            switch (k) {
            case 0: got = caterva_uninit(ctx, params, storage, &arr); break;
            case 1: got = caterva_empty(ctx, params, storage, &arr); break;
            case 2: got = caterva_zeros(ctx, params, storage, &arr); break;
            case 3: got = caterva_full(ctx, params, storage, fill, &arr); break;
            default: got = caterva_from_buffer(ctx, buf, 4096, params, storage, &arr); break;
            }
            if (got != rc) {
                fprintf(stderr, "    constructor %d, backend %d: returned %d, expected %d\n", k, b, got, rc);
            }
            CHECK(got == rc);
            CHECK(arr == SENTINEL_ARRAY);
            if (b >= 2) {
                CHECK(!h_exists(path));
            }
        }
    }
    free(buf);
    storage->urlpath = NULL;
    return 0;
}

static int test_invalid_params(const test_case_t *tc) {
    (void)tc;
    caterva_ctx_t *ctx = new_ctx();
    CHECK(ctx != NULL);
    caterva_params_t params;
    caterva_storage_t storage;

#define BAD(stmt, rc)                                                       \
    do {                                                                    \
        h_small_params(&params, &storage, NULL, false);                        \
        stmt;                                                               \
        if (expect_create_fails(ctx, &params, &storage, rc)) {              \
            fprintf(stderr, "    (with %s)\n", #stmt);                      \
            return 1;                                                       \
        }                                                                   \
    } while (0)

    BAD(params.ndim = 9, CATERVA_ERR_INVALID_ARGUMENT);
    BAD(params.ndim = -1, CATERVA_ERR_INVALID_ARGUMENT);
    BAD(params.ndim = INT8_MIN, CATERVA_ERR_INVALID_ARGUMENT);
    BAD(params.itemsize = 0, CATERVA_ERR_INVALID_ARGUMENT);
    BAD(params.shape[0] = -1, CATERVA_ERR_INVALID_ARGUMENT);
    BAD(params.shape[1] = INT64_MIN, CATERVA_ERR_INVALID_ARGUMENT);
    BAD(storage.blockshape[0] = 6, CATERVA_ERR_INVALID_ARGUMENT);  /* blockshape > chunkshape */
    BAD(storage.blockshape[1] = 5, CATERVA_ERR_INVALID_ARGUMENT);
    BAD(storage.chunkshape[0] = 0, CATERVA_ERR_INVALID_ARGUMENT);  /* on a non-empty axis */
    BAD(storage.chunkshape[1] = 0; storage.blockshape[1] = 0, CATERVA_ERR_INVALID_ARGUMENT);
    BAD(storage.blockshape[1] = 0, CATERVA_ERR_INVALID_ARGUMENT);
    BAD(storage.chunkshape[0] = -5, CATERVA_ERR_INVALID_ARGUMENT);
    BAD(storage.blockshape[0] = -2, CATERVA_ERR_INVALID_ARGUMENT);
    BAD(storage.nmetalayers = CATERVA_MAX_METALAYERS + 1, CATERVA_ERR_INVALID_ARGUMENT);
    BAD(storage.nmetalayers = -1, CATERVA_ERR_INVALID_ARGUMENT);

    /* Metalayers: a NULL name, the reserved name, a negative size. */
    uint8_t content[3] = {1, 2, 3};
    BAD(storage.metalayers[0].name = NULL; storage.metalayers[0].sdata = content;
        storage.metalayers[0].size = 3; storage.nmetalayers = 1,
        CATERVA_ERR_NULL_POINTER);
    BAD(storage.metalayers[0].name = "caterva"; storage.metalayers[0].sdata = content;
        storage.metalayers[0].size = 3; storage.nmetalayers = 1,
        CATERVA_ERR_INVALID_ARGUMENT);
    /* The reserved name as the second of two (creation fails late). */
    BAD(storage.metalayers[0].name = "fine"; storage.metalayers[0].sdata = content;
        storage.metalayers[0].size = 3; storage.metalayers[1].name = "caterva";
        storage.metalayers[1].sdata = content; storage.metalayers[1].size = 3; storage.nmetalayers = 2,
        CATERVA_ERR_INVALID_ARGUMENT);
    BAD(storage.metalayers[0].name = "neg"; storage.metalayers[0].sdata = content;
        storage.metalayers[0].size = -1; storage.nmetalayers = 1,
        CATERVA_ERR_INVALID_ARGUMENT);
    /* Names blosc2 cannot store: empty, or longer than 31 bytes; and a name given twice. */
    BAD(storage.metalayers[0].name = ""; storage.metalayers[0].sdata = content;
        storage.metalayers[0].size = 3; storage.nmetalayers = 1,
        CATERVA_ERR_INVALID_ARGUMENT);
    BAD(storage.metalayers[0].name = "a_metalayer_name_longer_than_31_bytes"; storage.metalayers[0].sdata = content;
        storage.metalayers[0].size = 3; storage.nmetalayers = 1,
        CATERVA_ERR_INVALID_ARGUMENT);
    BAD(storage.metalayers[0].name = "twice"; storage.metalayers[0].sdata = content;
        storage.metalayers[0].size = 3; storage.metalayers[1].name = "twice";
        storage.metalayers[1].sdata = content; storage.metalayers[1].size = 1; storage.nmetalayers = 2,
        CATERVA_ERR_INVALID_ARGUMENT);
#undef BAD

    /* Sanity: the good parameters do work on every backend. */
    h_small_params(&params, &storage, NULL, false);
    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_zeros(ctx, &params, &storage, &arr));
    CHECK_OK(caterva_free(ctx, &arr));
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* An empty axis may have chunkshape and blockshape 0, but a non-empty one may not. */
static int test_empty_axis_partitions(const test_case_t *tc) {
    (void)tc;
    caterva_ctx_t *ctx = new_ctx();
    CHECK(ctx != NULL);
    caterva_params_t params;
    caterva_storage_t storage;
    h_small_params(&params, &storage, NULL, true);
    params.shape[1] = 0;
    storage.chunkshape[1] = 0;
    storage.blockshape[1] = 0;
    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_zeros(ctx, &params, &storage, &arr));
    CHECK(arr->nitems == 0 && arr->shape[1] == 0);
    CHECK_OK(caterva_free(ctx, &arr));
    /* A length-0 axis with a proper partition is fine as well. */
    storage.chunkshape[1] = 3;
    storage.blockshape[1] = 2;
    CHECK_OK(caterva_zeros(ctx, &params, &storage, &arr));
    CHECK(arr->nitems == 0);
    CHECK_OK(caterva_free(ctx, &arr));
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* from_buffer: a buffer smaller than the array, or a negative size. */
static int test_from_buffer_too_small(const test_case_t *tc) {
    if (h_skip_disk_itemsize(tc)) {
        return 0;
    }
    if (h_nitems(tc->shape.ndim, tc->shape.shape) == 0) {
        return 0;
    }
    caterva_ctx_t *ctx = new_ctx();
    CHECK(ctx != NULL);
    char path[256] = {0};
    char *url = h_urlpath(tc, "bad_from_buffer");
    if (url != NULL) {
        snprintf(path, sizeof(path), "%s", url);
        CHECK_OK(caterva_remove(ctx, path));
    }
    caterva_params_t params;
    caterva_storage_t storage;
    h_fill(tc, &params, &storage, url != NULL ? path : NULL);
    int64_t nbytes = h_nitems(tc->shape.ndim, tc->shape.shape) * tc->itemsize;
    uint8_t *buf = malloc((size_t)nbytes);
    CHECK(buf != NULL);
    h_fill_buffer(buf, nbytes / tc->itemsize, tc->itemsize);
    caterva_array_t *arr = SENTINEL_ARRAY;
    CHECK_RC(caterva_from_buffer(ctx, buf, nbytes - 1, &params, &storage, &arr), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(arr == SENTINEL_ARRAY);
    CHECK_RC(caterva_from_buffer(ctx, buf, 0, &params, &storage, &arr), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(arr == SENTINEL_ARRAY);
    CHECK_RC(caterva_from_buffer(ctx, buf, -1, &params, &storage, &arr), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(arr == SENTINEL_ARRAY);
    if (url != NULL) {
        CHECK(!h_exists(path));
    }
    free(buf);
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* ---- Slices ----------------------------------------------------------- */

#define SENT 0xD7

/* For every case with ndim > 0: invalid slices are refused with
 * CATERVA_ERR_INVALID_ARGUMENT, the output buffer is untouched, and for
 * set_slice_buffer the array is unchanged. */
static int test_bad_slices(const test_case_t *tc) {
    if (h_skip_disk_itemsize(tc)) {
        return 0;
    }
    int8_t ndim = tc->shape.ndim;
    if (ndim == 0) {
        return 0;
    }
    caterva_ctx_t *ctx = new_ctx();
    CHECK(ctx != NULL);
    char path[256] = {0};
    char *url = h_urlpath(tc, "bad_slices");
    if (url != NULL) {
        snprintf(path, sizeof(path), "%s", url);
        CHECK_OK(caterva_remove(ctx, path));
    }
    caterva_params_t params;
    caterva_storage_t storage;
    h_fill(tc, &params, &storage, url != NULL ? path : NULL);
    const int64_t *shape = tc->shape.shape;
    int64_t nitems = h_nitems(ndim, shape);
    int64_t nbytes = nitems * tc->itemsize;
    uint8_t *data = malloc((size_t)nbytes + 1);
    uint8_t *check = malloc((size_t)nbytes + 1);
    CHECK(data != NULL && check != NULL);
    h_fill_buffer(data, nitems, tc->itemsize);
    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_from_buffer(ctx, data, nbytes, &params, &storage, &arr));

    /* A big output buffer, filled with a sentinel; a big source buffer. */
    int64_t cap = (2 * nitems + 64) * tc->itemsize;
    uint8_t *out = malloc((size_t)cap);
    uint8_t *in = malloc((size_t)cap);
    CHECK(out != NULL && in != NULL);
    memset(in, 0x5E, (size_t)cap);

    /* The axis to break: one of positive length if any, else the last. */
    int ax = ndim - 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] > 0) {
            ax = i;
            break;
        }
    }
    for (int kind = 0; kind < 7; kind++) {
        int64_t start[CATERVA_MAX_DIM] = {0}, stop[CATERVA_MAX_DIM] = {0}, bshape[CATERVA_MAX_DIM] = {0};
        for (int i = 0; i < ndim; i++) {
            start[i] = 0;
            stop[i] = shape[i];
            bshape[i] = shape[i];
        }
        int64_t bsize = cap;
        switch (kind) {
        case 0: /* start > stop */
            if (shape[ax] == 0) {
                continue;
            }
            start[ax] = shape[ax];
            stop[ax] = shape[ax] - 1;
            bshape[ax] = 1;
            break;
        case 1: /* stop > shape */
            stop[ax] = shape[ax] + 1;
            bshape[ax] = shape[ax] + 1;
            break;
        case 2: /* negative start */
            start[ax] = -1;
            bshape[ax] = shape[ax] + 1;
            break;
        case 3: /* start > shape (and stop too) */
            start[ax] = shape[ax] + 1;
            stop[ax] = shape[ax] + 2;
            bshape[ax] = 1;
            break;
        case 4: /* buffersize too small for buffershape */
            if (nitems == 0) {
                continue;
            }
            bsize = nbytes - 1;
            break;
        case 5: /* buffershape smaller than the slice */
            if (shape[ax] == 0) {
                continue;
            }
            bshape[ax] = shape[ax] - 1;
            break;
        default: /* a negative buffer size */
            bsize = -1;
            break;
        }
        memset(out, SENT, (size_t)cap);
        int rc = caterva_get_slice_buffer(ctx, arr, start, stop, out, bshape, bsize);
        if (rc != CATERVA_ERR_INVALID_ARGUMENT) {
            fprintf(stderr, "    get_slice_buffer, bad slice kind %d: returned %d\n", kind, rc);
        }
        CHECK(rc == CATERVA_ERR_INVALID_ARGUMENT);
        for (int64_t k = 0; k < cap; k++) {
            CHECK(out[k] == SENT);
        }
        rc = caterva_set_slice_buffer(ctx, in, bshape, bsize, start, stop, arr);
        if (rc != CATERVA_ERR_INVALID_ARGUMENT) {
            fprintf(stderr, "    set_slice_buffer, bad slice kind %d: returned %d\n", kind, rc);
        }
        CHECK(rc == CATERVA_ERR_INVALID_ARGUMENT);
        CHECK(arr->nitems == nitems);
        for (int i = 0; i < ndim; i++) {
            CHECK(arr->shape[i] == shape[i]);
        }
    }
    /* None of the failed writes changed the array. */
    memset(check, 0, (size_t)nbytes + 1);
    CHECK_OK(caterva_to_buffer(ctx, arr, check, nbytes));
    CHECK(memcmp(check, data, (size_t)nbytes) == 0);

    /* to_buffer with a buffer one byte short, or a negative size. */
    if (nitems > 0) {
        memset(out, SENT, (size_t)cap);
        CHECK_RC(caterva_to_buffer(ctx, arr, out, nbytes - 1), CATERVA_ERR_INVALID_ARGUMENT);
        for (int64_t k = 0; k < cap; k++) {
            CHECK(out[k] == SENT);
        }
        CHECK_RC(caterva_to_buffer(ctx, arr, out, 0), CATERVA_ERR_INVALID_ARGUMENT);
        CHECK(out[0] == SENT);
    }
    CHECK_RC(caterva_to_buffer(ctx, arr, out, -1), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(out[0] == SENT);

    CHECK_OK(caterva_free(ctx, &arr));
    if (url != NULL) {
        /* Nothing of the failed writes reached the disk. */
        CHECK_OK(caterva_open(ctx, path, &arr));
        memset(check, 0, (size_t)nbytes + 1);
        CHECK_OK(caterva_to_buffer(ctx, arr, check, nbytes));
        CHECK(memcmp(check, data, (size_t)nbytes) == 0);
        CHECK_OK(caterva_free(ctx, &arr));
        CHECK_OK(caterva_remove(ctx, path));
    }
    free(out);
    free(in);
    free(data);
    free(check);
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* ---- Files and frames ------------------------------------------------- */

static int write_file(const char *path, const uint8_t *bytes, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    CHECK(fwrite(bytes, 1, n, f) == n);
    CHECK(fclose(f) == 0);
    return 0;
}

static int test_open_bad_paths(const test_case_t *tc) {
    (void)tc;
    caterva_ctx_t *ctx = new_ctx();
    CHECK(ctx != NULL);
    caterva_array_t *arr = SENTINEL_ARRAY;

    /* Missing paths. */
    char missing[] = "ctest_no_such_array.b2frame";
    char missing_dir[] = "ctest_no_such_array.b2nd";
    CHECK_OK(caterva_remove(ctx, missing));
    CHECK_OK(caterva_remove(ctx, missing_dir));
    CHECK(caterva_open(ctx, missing, &arr) != CATERVA_SUCCEED);
    CHECK(arr == SENTINEL_ARRAY);
    CHECK(caterva_open(ctx, missing_dir, &arr) != CATERVA_SUCCEED);
    CHECK(arr == SENTINEL_ARRAY);
    CHECK(caterva_open(ctx, "", &arr) != CATERVA_SUCCEED);
    CHECK(arr == SENTINEL_ARRAY);
    /* Opening does not create anything. */
    CHECK(!h_exists(missing) && !h_exists(missing_dir));

    /* A file of garbage, and an empty file. */
    char garbage[] = "ctest_garbage.b2frame";
    uint8_t bytes[300];
    for (int i = 0; i < 300; i++) {
        bytes[i] = (uint8_t)(i * 37 + 11);
    }
    if (write_file(garbage, bytes, sizeof(bytes))) {
        return 1;
    }
    CHECK(caterva_open(ctx, garbage, &arr) != CATERVA_SUCCEED);
    CHECK(arr == SENTINEL_ARRAY);
    /* The file is left alone. */
    FILE *f = fopen(garbage, "rb");
    CHECK(f != NULL);
    uint8_t back[301];
    CHECK(fread(back, 1, sizeof(back), f) == sizeof(bytes));
    fclose(f);
    CHECK(memcmp(back, bytes, sizeof(bytes)) == 0);
    if (write_file(garbage, bytes, 0)) {
        return 1;
    }
    CHECK(caterva_open(ctx, garbage, &arr) != CATERVA_SUCCEED);
    CHECK(arr == SENTINEL_ARRAY);
    CHECK(remove(garbage) == 0);

    /* A valid frame truncated in the middle. */
    caterva_params_t params;
    caterva_storage_t storage;
    char good[] = "ctest_truncated.b2frame";
    CHECK_OK(caterva_remove(ctx, good));
    h_small_params(&params, &storage, good, true);
    uint8_t data[10 * 8 * 4];
    h_fill_buffer(data, 80, 4);
    caterva_array_t *src = NULL;
    CHECK_OK(caterva_from_buffer(ctx, data, (int64_t)sizeof(data), &params, &storage, &src));
    CHECK_OK(caterva_free(ctx, &src));
    f = fopen(good, "rb");
    CHECK(f != NULL);
    uint8_t frame[65536];
    size_t flen = fread(frame, 1, sizeof(frame), f);
    fclose(f);
    CHECK(flen > 64 && flen < sizeof(frame));
    if (write_file(good, frame, flen / 2)) {
        return 1;
    }
    CHECK(caterva_open(ctx, good, &arr) != CATERVA_SUCCEED);
    CHECK(arr == SENTINEL_ARRAY);
    CHECK_OK(caterva_remove(ctx, good));
    CHECK(!h_exists(good));

    /* A sparse-frame directory whose index file is gone. */
    char sparse[] = "ctest_no_index.b2nd";
    CHECK_OK(caterva_remove(ctx, sparse));
    h_small_params(&params, &storage, sparse, false);
    CHECK_OK(caterva_from_buffer(ctx, data, (int64_t)sizeof(data), &params, &storage, &src));
    CHECK_OK(caterva_free(ctx, &src));
    CHECK(remove("ctest_no_index.b2nd/chunks.b2frame") == 0);
    CHECK(caterva_open(ctx, sparse, &arr) != CATERVA_SUCCEED);
    CHECK(arr == SENTINEL_ARRAY);
    CHECK_OK(caterva_remove(ctx, sparse));
    CHECK(!h_exists(sparse));

    /* A frame without the 'caterva' metalayer is not an array. */
    blosc2_init(); /* no-op when already done */
    char plain[] = "ctest_plain_schunk.b2frame";
    CHECK_OK(caterva_remove(ctx, plain));
    blosc2_storage bstorage = BLOSC2_STORAGE_DEFAULTS;
    bstorage.contiguous = true;
    bstorage.urlpath = plain;
    blosc2_schunk *sc = blosc2_schunk_new(&bstorage);
    CHECK(sc != NULL);
    int32_t chunk[16] = {0};
    CHECK(blosc2_schunk_append_buffer(sc, chunk, (int32_t)sizeof(chunk)) == 1);
    blosc2_schunk_free(sc);
    CHECK(h_exists(plain));
    CHECK(caterva_open(ctx, plain, &arr) != CATERVA_SUCCEED);
    CHECK(arr == SENTINEL_ARRAY);
    CHECK_OK(caterva_remove(ctx, plain));
    CHECK(!h_exists(plain));

    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

static int test_from_cframe_garbage(const test_case_t *tc) {
    (void)tc;
    caterva_ctx_t *ctx = new_ctx();
    CHECK(ctx != NULL);
    caterva_array_t *arr = SENTINEL_ARRAY;
    uint8_t bytes[512];
    for (int i = 0; i < 512; i++) {
        bytes[i] = (uint8_t)(i * 91 + 3);
    }
    CHECK(caterva_from_cframe(ctx, bytes, (int64_t)sizeof(bytes), true, &arr) != CATERVA_SUCCEED);
    CHECK(arr == SENTINEL_ARRAY);
    CHECK(caterva_from_cframe(ctx, bytes, (int64_t)sizeof(bytes), false, &arr) != CATERVA_SUCCEED);
    CHECK(arr == SENTINEL_ARRAY);
    CHECK(caterva_from_cframe(ctx, bytes, 0, true, &arr) != CATERVA_SUCCEED);
    CHECK(arr == SENTINEL_ARRAY);
    CHECK_RC(caterva_from_cframe(ctx, bytes, -1, true, &arr), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(arr == SENTINEL_ARRAY);

    /* A valid frame cut short. */
    caterva_array_t *src = NULL;
    uint8_t *cframe = NULL;
    int64_t clen = 0;
    bool nf = false;
    if (h_small_frame(ctx, NULL, &src, &cframe, &clen, &nf)) {
        return 1;
    }
    CHECK(clen > 64);
    uint8_t *half = malloc((size_t)clen / 2);
    CHECK(half != NULL);
    memcpy(half, cframe, (size_t)clen / 2);
    CHECK(caterva_from_cframe(ctx, half, clen / 2, true, &arr) != CATERVA_SUCCEED);
    CHECK(arr == SENTINEL_ARRAY);
    free(half);
    /* A frame of a plain super-chunk (no 'caterva' metalayer). */
    blosc2_init(); /* no-op when already done */
    blosc2_storage bstorage = BLOSC2_STORAGE_DEFAULTS;
    bstorage.contiguous = true;
    blosc2_schunk *sc = blosc2_schunk_new(&bstorage);
    CHECK(sc != NULL);
    int32_t chunk[16] = {0};
    CHECK(blosc2_schunk_append_buffer(sc, chunk, (int32_t)sizeof(chunk)) == 1);
    uint8_t *plain = NULL;
    bool plain_nf = false;
    int64_t plain_len = blosc2_schunk_to_buffer(sc, &plain, &plain_nf);
    CHECK(plain_len > 0);
    CHECK(caterva_from_cframe(ctx, plain, plain_len, true, &arr) != CATERVA_SUCCEED);
    CHECK(arr == SENTINEL_ARRAY);
    if (plain_nf) {
        free(plain);
    }
    /* caterva_from_schunk refuses it too, and the super-chunk stays the
     * caller's: still usable, and freed here. */
    CHECK(caterva_from_schunk(ctx, sc, &arr) != CATERVA_SUCCEED);
    CHECK(arr == SENTINEL_ARRAY);
    int32_t back[16] = {1};
    CHECK(blosc2_schunk_decompress_chunk(sc, 0, back, (int32_t)sizeof(back)) == (int)sizeof(back));
    CHECK(memcmp(back, chunk, sizeof(chunk)) == 0);
    blosc2_schunk_free(sc);

    if (nf) {
        free(cframe);
    }
    CHECK_OK(caterva_free(ctx, &src));
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* Metalayer calls with bad names and sizes. */
static int test_bad_metalayer_calls(const test_case_t *tc) {
    (void)tc;
    caterva_ctx_t *ctx = new_ctx();
    CHECK(ctx != NULL);
    caterva_params_t params;
    caterva_storage_t storage;
    h_small_params(&params, &storage, NULL, true);
    uint8_t content[4] = {1, 2, 3, 4};
    storage.metalayers[0].name = "user";
    storage.metalayers[0].sdata = content;
    storage.metalayers[0].size = 4;
    storage.nmetalayers = 1;
    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_zeros(ctx, &params, &storage, &arr));

    /* meta_update with a negative size. */
    uint8_t other[4] = {9, 9, 9, 9};
    caterva_metalayer_t m = {"user", other, -4};
    CHECK_RC(caterva_meta_update(ctx, arr, &m), CATERVA_ERR_INVALID_ARGUMENT);
    /* ... with a different size. */
    m.size = 3;
    CHECK_RC(caterva_meta_update(ctx, arr, &m), CATERVA_ERR_INVALID_ARGUMENT);
    caterva_metalayer_t got = {NULL, NULL, 0};
    CHECK_OK(caterva_meta_get(ctx, arr, "user", &got));
    CHECK(got.size == 4 && memcmp(got.sdata, content, 4) == 0);
    free(got.name);
    free(got.sdata);

    /* vlmeta names that cannot be stored. */
    caterva_metalayer_t badname = {"a_vlmetalayer_name_longer_than_31_bytes", other, 4};
    CHECK_RC(caterva_vlmeta_add(ctx, arr, &badname), CATERVA_ERR_INVALID_ARGUMENT);
    badname.name = "";
    CHECK_RC(caterva_vlmeta_add(ctx, arr, &badname), CATERVA_ERR_INVALID_ARGUMENT);
    /* meta_update of a name that was never added. */
    caterva_metalayer_t absent = {"absent", other, 4};
    CHECK(caterva_meta_update(ctx, arr, &absent) != CATERVA_SUCCEED);

    /* vlmeta with a negative size. */
    caterva_metalayer_t vl = {"vl", other, -1};
    CHECK_RC(caterva_vlmeta_add(ctx, arr, &vl), CATERVA_ERR_INVALID_ARGUMENT);
    bool exists = true;
    CHECK_OK(caterva_vlmeta_exists(ctx, arr, "vl", &exists));
    CHECK(!exists);
    vl.size = 4;
    CHECK_OK(caterva_vlmeta_add(ctx, arr, &vl));
    vl.size = -1;
    CHECK_RC(caterva_vlmeta_update(ctx, arr, &vl), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_OK(caterva_vlmeta_get(ctx, arr, "vl", &got));
    CHECK(got.size == 4 && memcmp(got.sdata, other, 4) == 0);
    free(got.name);
    free(got.sdata);
    /* Adding an existing name fails and keeps the old content. */
    vl.sdata = content;
    vl.size = 2;
    CHECK(caterva_vlmeta_add(ctx, arr, &vl) != CATERVA_SUCCEED);
    CHECK_OK(caterva_vlmeta_get(ctx, arr, "vl", &got));
    CHECK(got.size == 4 && memcmp(got.sdata, other, 4) == 0);
    free(got.name);
    free(got.sdata);

    CHECK_OK(caterva_free(ctx, &arr));
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* An existing non-frame file at the urlpath is not destroyed by a create. */
static int test_create_over_foreign_file(const test_case_t *tc) {
    (void)tc;
    caterva_ctx_t *ctx = new_ctx();
    CHECK(ctx != NULL);
    char path[] = "ctest_foreign.b2nd";
    CHECK_OK(caterva_remove(ctx, path));
    uint8_t bytes[5] = {'h', 'e', 'l', 'l', 'o'};
    if (write_file(path, bytes, sizeof(bytes))) {
        return 1;
    }
    caterva_params_t params;
    caterva_storage_t storage;
    h_small_params(&params, &storage, path, false);
    caterva_array_t *arr = SENTINEL_ARRAY;
    CHECK(caterva_zeros(ctx, &params, &storage, &arr) != CATERVA_SUCCEED);
    CHECK(arr == SENTINEL_ARRAY);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    uint8_t back[8];
    CHECK(fread(back, 1, sizeof(back), f) == 5);
    fclose(f);
    CHECK(memcmp(back, bytes, 5) == 0);
    CHECK(remove(path) == 0);
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

void suite_bad_input(void) {
    RUN_CASE(test_invalid_config);
    RUN_CASE(test_null_context_functions);
    RUN_CASE(test_null_constructors);
    RUN_CASE(test_null_array_functions);
    RUN_CASE(test_invalid_params);
    RUN_CASE(test_empty_axis_partitions);
    RUN_ALL_CASES(test_from_buffer_too_small);
    RUN_ALL_CASES(test_bad_slices);
    RUN_CASE(test_open_bad_paths);
    RUN_CASE(test_from_cframe_garbage);
    RUN_CASE(test_bad_metalayer_calls);
    RUN_CASE(test_create_over_foreign_file);
}
