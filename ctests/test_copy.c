/* caterva_copy: a new array with the storage's partitions and location and
 * the same items; src's user metalayers and vlmetalayers come along, and the
 * 'caterva' metalayer describes the new partitions. Same and different
 * partitions, into every destination storage, from every source storage. */
#include <stdlib.h>

#include "reshape_model.h"

static uint8_t UMETA[4] = {0xDE, 0xAD, 0xBE, 0xEF};
static uint8_t VL1[5] = {'f', 'i', 'r', 's', 't'};
static uint8_t VL2[1] = {42};

/* Copy src into backend db with partitions chunk/block and check the copy
 * (after reopening it as well, when on disk). */
static int copy_and_check(caterva_ctx_t *ctx, caterva_array_t *src, const model_t *sm, const int32_t *chunk,
                          const int32_t *block, const backend_t *db) {
    char dpath[64];
    snprintf(dpath, sizeof(dpath), "%s", db->contiguous ? "ctest_copy_dst.b2frame" : "ctest_copy_dst.b2nd");
    CHECK_OK(caterva_remove(ctx, dpath));
    caterva_storage_t ds;
    memset(&ds, 0, sizeof(ds));
    for (int i = 0; i < sm->ndim; i++) {
        ds.chunkshape[i] = chunk[i];
        ds.blockshape[i] = block[i];
    }
    ds.contiguous = db->contiguous;
    ds.urlpath = db->persistent ? dpath : NULL;
    int64_t start[CATERVA_MAX_DIM] = {0};
    model_t dm;
    CHECK(m_slice(sm, start, sm->shape, chunk, block, &dm) == 0);

    caterva_array_t *dst = NULL;
    CHECK_OK(caterva_copy(ctx, src, &ds, &dst));
    CHECK(dst != NULL && dst != src && dst->sc != src->sc);
    if (db->persistent) {
        CHECK(h_exists(dpath));
        CHECK(h_is_dir(dpath) == !db->contiguous);
    }
    for (int pass = 0; pass < 2; pass++) {
        if (m_check(ctx, dst, &dm) || m_check_caterva_meta(ctx, dst, &dm) ||
            m_expect_meta(ctx, dst, "umeta", UMETA, 4, false) || m_expect_meta(ctx, dst, "vl1", VL1, 5, true) ||
            m_expect_meta(ctx, dst, "vl2", VL2, 1, true)) {
            return 1;
        }
        if (pass == 0 && m_reopen(ctx, &dst, ds.urlpath)) {
            return 1;
        }
    }
    /* The copy is independent of src: its vlmetalayers and items change alone
     * (the caller checks src's items at the end). */
    uint8_t other[3] = {7, 7, 7};
    caterva_metalayer_t vl = {"vl1", other, 3};
    CHECK_OK(caterva_vlmeta_update(ctx, dst, &vl));
    if (m_expect_meta(ctx, dst, "vl1", other, 3, true) || m_expect_meta(ctx, src, "vl1", VL1, 5, true)) {
        return 1;
    }
    if (m_nitems(&dm) > 0) {
        int64_t z[CATERVA_MAX_DIM] = {0}, one[CATERVA_MAX_DIM] = {0};
        for (int i = 0; i < dm.ndim; i++) {
            one[i] = 1;
        }
        uint8_t item[8] = {0xC3, 0xC3, 0xC3, 0xC3, 0xC3, 0xC3, 0xC3, 0xC3};
        CHECK_OK(caterva_set_slice_buffer(ctx, item, one, dm.itemsize, z, one, dst));
        dm.v[0] = h_get(item, 0, dm.itemsize);
        if (m_check(ctx, dst, &dm)) {
            return 1;
        }
    }
    CHECK_OK(caterva_free(ctx, &dst));
    CHECK_OK(caterva_remove(ctx, dpath));
    CHECK(!h_exists(dpath));
    m_free(&dm);
    return 0;
}

static int test_copy(const test_case_t *tc) {
    if (m_skip(tc)) {
        return 0;
    }
    caterva_ctx_t *ctx = NULL;
    char path[256];
    caterva_params_t params;
    caterva_storage_t storage;
    CHECK_OK(h_setup(tc, "copy_src", &ctx, path, &params, &storage));
    storage.metalayers[0].name = "umeta";
    storage.metalayers[0].sdata = UMETA;
    storage.metalayers[0].size = 4;
    storage.nmetalayers = 1;
    caterva_array_t *src = NULL;
    model_t sm;
    if (m_from_buffer(ctx, tc, &params, &storage, &src, &sm)) {
        return 1;
    }
    caterva_metalayer_t vl1 = {"vl1", VL1, 5}, vl2 = {"vl2", VL2, 1};
    CHECK_OK(caterva_vlmeta_add(ctx, src, &vl1));
    CHECK_OK(caterva_vlmeta_add(ctx, src, &vl2));

    int8_t ndim = tc->shape.ndim;
    int32_t other_chunk[CATERVA_MAX_DIM] = {0}, other_block[CATERVA_MAX_DIM] = {0};
    for (int i = 0; i < ndim; i++) {
        other_chunk[i] = (int32_t)(sm.shape[i] / 2 + 1);
        other_block[i] = (other_chunk[i] + 1) / 2;
    }
    size_t b = 0;
    while (BACKENDS[b].contiguous != tc->backend.contiguous || BACKENDS[b].persistent != tc->backend.persistent) {
        b++;
    }
    for (size_t d = 0; d < 4; d++) {
        /* Into every destination, with the same partitions or others
         * depending on the source's storage: over the four sources, every
         * destination gets both. */
        int p = (int)((d + b) % 2);
        const int32_t *chunk = p == 0 ? sm.chunkshape : other_chunk;
        const int32_t *block = p == 0 ? sm.blockshape : other_block;
        if (copy_and_check(ctx, src, &sm, chunk, block, &BACKENDS[d])) {
            fprintf(stderr, "    copy into backend %zu, %s partitions\n", d, p == 0 ? "same" : "other");
            return 1;
        }
    }
    /* src is unchanged. */
    if (m_recheck(ctx, &src, path, &sm) || m_expect_meta(ctx, src, "umeta", UMETA, 4, false) ||
        m_expect_meta(ctx, src, "vl1", VL1, 5, true) || m_expect_meta(ctx, src, "vl2", VL2, 1, true)) {
        return 1;
    }
    return m_finish(&ctx, &src, &sm, path);
}

/* A copy of a copy of an array that was resized and had rows appended:
 * the copy sees the current geometry, not the one at creation. */
static int test_copy_after_reshape(const test_case_t *tc) {
    if (m_skip(tc)) {
        return 0;
    }
    caterva_ctx_t *ctx = NULL;
    char path[256];
    caterva_params_t params;
    caterva_storage_t storage;
    CHECK_OK(h_setup(tc, "copy_reshaped", &ctx, path, &params, &storage));
    caterva_array_t *src = NULL;
    model_t sm;
    if (m_from_buffer(ctx, tc, &params, &storage, &src, &sm)) {
        return 1;
    }
    int64_t shape[CATERVA_MAX_DIM] = {13, 5};
    CHECK_OK(caterva_resize(ctx, src, shape, NULL));
    CHECK(m_resize(&sm, shape, NULL) == 0);
    int64_t nbytes = 0;
    uint8_t *rows = m_slab(&sm, 0, 3, 900, &nbytes);
    CHECK(rows != NULL);
    CHECK_OK(caterva_append(ctx, src, rows, nbytes, 0));
    CHECK(m_insert(&sm, 0, sm.shape[0], 3, rows) == 0);
    free(rows);
    if (m_check(ctx, src, &sm)) {
        return 1;
    }
    caterva_storage_t ds;
    memset(&ds, 0, sizeof(ds));
    ds.chunkshape[0] = 4;
    ds.chunkshape[1] = 4;
    ds.blockshape[0] = 2;
    ds.blockshape[1] = 3;
    ds.contiguous = true;
    caterva_array_t *c1 = NULL, *c2 = NULL;
    CHECK_OK(caterva_copy(ctx, src, &ds, &c1));
    ds.contiguous = false;
    ds.chunkshape[0] = 16;
    ds.blockshape[0] = 16;
    CHECK_OK(caterva_copy(ctx, c1, &ds, &c2));
    int64_t zero[CATERVA_MAX_DIM] = {0};
    int32_t chunk1[2] = {4, 4}, block1[2] = {2, 3}, chunk2[2] = {16, 4}, block2[2] = {16, 3};
    model_t m1, m2;
    CHECK(m_slice(&sm, zero, sm.shape, chunk1, block1, &m1) == 0);
    CHECK(m_slice(&sm, zero, sm.shape, chunk2, block2, &m2) == 0);
    if (m_check(ctx, c1, &m1) || m_check(ctx, c2, &m2) || m_check_caterva_meta(ctx, c2, &m2)) {
        return 1;
    }
    CHECK_OK(caterva_free(ctx, &c1));
    CHECK_OK(caterva_free(ctx, &c2));
    m_free(&m1);
    m_free(&m2);
    return m_finish(&ctx, &src, &sm, path);
}

void suite_copy(void) {
    static const shape_case_t small = {2, {9, 7}, {4, 3}, {2, 2}};
    RUN_ALL_CASES(test_copy);
    m_run_shape("test_copy_after_reshape", test_copy_after_reshape, &small);
}
