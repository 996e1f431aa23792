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
    caterva_storage_t ds;
    CHECK(m_dest(ctx, db, "ctest_copy_dst", sm->ndim, chunk, block, dpath, &ds) == 0);
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
    if (m_write_origin(ctx, dst, &dm, 0xC3)) {
        return 1;
    }
    return m_drop_dest(ctx, &dst, &dm, dpath);
}

static int test_copy(const test_case_t *tc) {
    if (m_skip(tc)) {
        return 0;
    }
    fixture_t f;
    CHECK(fx_setup(&f, tc, "copy_src") == 0);
    f.storage.metalayers[0].name = "umeta";
    f.storage.metalayers[0].sdata = UMETA;
    f.storage.metalayers[0].size = 4;
    f.storage.nmetalayers = 1;
    if (fx_create(&f, tc, false)) {
        return 1;
    }
    caterva_metalayer_t vl1 = {"vl1", VL1, 5}, vl2 = {"vl2", VL2, 1};
    CHECK_OK(caterva_vlmeta_add(f.ctx, f.arr, &vl1));
    CHECK_OK(caterva_vlmeta_add(f.ctx, f.arr, &vl2));

    int8_t ndim = tc->shape.ndim;
    int32_t other_chunk[CATERVA_MAX_DIM] = {0}, other_block[CATERVA_MAX_DIM] = {0};
    for (int i = 0; i < ndim; i++) {
        other_chunk[i] = (int32_t)(f.m.shape[i] / 2 + 1);
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
        const int32_t *chunk = p == 0 ? f.m.chunkshape : other_chunk;
        const int32_t *block = p == 0 ? f.m.blockshape : other_block;
        if (copy_and_check(f.ctx, f.arr, &f.m, chunk, block, &BACKENDS[d])) {
            fprintf(stderr, "    copy into backend %zu, %s partitions\n", d, p == 0 ? "same" : "other");
            return 1;
        }
    }
    /* src is unchanged. */
    if (fx_recheck(&f) || m_expect_meta(f.ctx, f.arr, "umeta", UMETA, 4, false) ||
        m_expect_meta(f.ctx, f.arr, "vl1", VL1, 5, true) || m_expect_meta(f.ctx, f.arr, "vl2", VL2, 1, true)) {
        return 1;
    }
    return fx_end(&f);
}

/* A copy of a copy of an array that was resized and had rows appended:
 * the copy sees the current geometry, not the one at creation. */
static int test_copy_after_reshape(const test_case_t *tc) {
    if (m_skip(tc)) {
        return 0;
    }
    fixture_t f;
    CHECK(fx_setup(&f, tc, "copy_reshaped") == 0);
    if (fx_create(&f, tc, false)) {
        return 1;
    }
    int64_t shape[CATERVA_MAX_DIM] = {13, 5};
    CHECK_OK(caterva_resize(f.ctx, f.arr, shape, NULL));
    CHECK(m_resize(&f.m, shape, NULL) == 0);
    int64_t nbytes = 0;
    uint8_t *rows = m_slab(&f.m, 0, 3, 900, &nbytes);
    CHECK(rows != NULL);
    CHECK_OK(caterva_append(f.ctx, f.arr, rows, nbytes, 0));
    CHECK(m_insert(&f.m, 0, f.m.shape[0], 3, rows) == 0);
    free(rows);
    if (fx_check(&f)) {
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
    CHECK_OK(caterva_copy(f.ctx, f.arr, &ds, &c1));
    ds.contiguous = false;
    ds.chunkshape[0] = 16;
    ds.blockshape[0] = 16;
    CHECK_OK(caterva_copy(f.ctx, c1, &ds, &c2));
    int64_t zero[CATERVA_MAX_DIM] = {0};
    int32_t chunk1[2] = {4, 4}, block1[2] = {2, 3}, chunk2[2] = {16, 4}, block2[2] = {16, 3};
    model_t m1, m2;
    CHECK(m_slice(&f.m, zero, f.m.shape, chunk1, block1, &m1) == 0);
    CHECK(m_slice(&f.m, zero, f.m.shape, chunk2, block2, &m2) == 0);
    if (m_check(f.ctx, c1, &m1) || m_check(f.ctx, c2, &m2) || m_check_caterva_meta(f.ctx, c2, &m2)) {
        return 1;
    }
    CHECK_OK(caterva_free(f.ctx, &c1));
    CHECK_OK(caterva_free(f.ctx, &c2));
    m_free(&m1);
    m_free(&m2);
    return fx_end(&f);
}

void suite_copy(void) {
    static const shape_case_t small = {2, {9, 7}, {4, 3}, {2, 2}};
    RUN_ALL_CASES(test_copy);
    m_run_shape("test_copy_after_reshape", test_copy_after_reshape, &small);
}
