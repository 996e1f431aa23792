/* The reshaping calls one after another on one array, with a context of
 * four threads: resize, insert, append, delete, orthogonal writes, then
 * get_slice and copy of the result, all against the model, also with item
 * sizes 3, 5 and 7; and caterva_full arrays through copy and get_slice. */
#include <stdlib.h>

#include "reshape_model.h"

static int test_reshape_sequence(const test_case_t *tc) {
    if (m_skip(tc)) {
        return 0;
    }
    fixture_t f;
    CHECK(fx_setup(&f, tc, "reshape_sequence") == 0);
    /* The same storage with a four-thread context. */
    CHECK_OK(caterva_ctx_free(&f.ctx));
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    cfg.nthreads = 4;
    CHECK_OK(caterva_ctx_new(&cfg, &f.ctx));
    if (fx_create(&f, tc, false)) {
        return 1;
    }

    /* Grow the first axis inside, shrink the second inside. */
    int64_t shape[CATERVA_MAX_DIM] = {f.m.shape[0] + 9, f.m.shape[1] - 7, f.m.shape[2]};
    int64_t start[CATERVA_MAX_DIM] = {11, 3, 0};
    CHECK_OK(caterva_resize(f.ctx, f.arr, shape, start));
    CHECK(m_resize(&f.m, shape, start) == 0);
    if (fx_check(&f)) {
        return 1;
    }
    /* Insert 4 planes on the last axis at 5, append 3 rows, delete 6 columns from 2. */
    int64_t nbytes = 0;
    uint8_t *slab = m_slab(&f.m, 2, 4, 4000, &nbytes);
    CHECK(slab != NULL);
    CHECK_OK(caterva_insert(f.ctx, f.arr, slab, nbytes, 2, 5));
    CHECK(m_insert(&f.m, 2, 5, 4, slab) == 0);
    free(slab);
    slab = m_slab(&f.m, 0, 3, 8000, &nbytes);
    CHECK(slab != NULL);
    CHECK_OK(caterva_append(f.ctx, f.arr, slab, nbytes, 0));
    CHECK(m_insert(&f.m, 0, f.m.shape[0], 3, slab) == 0);
    free(slab);
    CHECK_OK(caterva_delete(f.ctx, f.arr, 1, 2, 6));
    CHECK(m_delete(&f.m, 1, 2, 6) == 0);
    if (fx_recheck(&f)) {
        return 1;
    }

    /* An orthogonal write across the whole array. */
    int64_t s0[5] = {0, f.m.shape[0] - 1, 17, 3, 17};
    int64_t s1[3] = {f.m.shape[1] - 1, 0, 4};
    int64_t s2[4] = {2, 9, 0, f.m.shape[2] - 1};
    int64_t *sel[CATERVA_MAX_DIM] = {s0, s1, s2};
    int64_t size[CATERVA_MAX_DIM] = {5, 3, 4};
    int64_t bshape[CATERVA_MAX_DIM] = {5, 3, 4};
    uint8_t buf[60 * 8];
    for (int64_t j = 0; j < 60; j++) {
        m_put(buf, j, tc->itemsize, h_value(12000 + j, tc->itemsize));
    }
    CHECK_OK(caterva_set_orthogonal_selection(f.ctx, f.arr, sel, size, buf, bshape, 60 * tc->itemsize));
    int64_t j[CATERVA_MAX_DIM] = {0};
    do {
        int64_t a[CATERVA_MAX_DIM] = {s0[j[0]], s1[j[1]], s2[j[2]]};
        f.m.v[h_linear(3, f.m.shape, a)] = h_get(buf, h_linear(3, bshape, j), tc->itemsize);
    } while (h_next_index(3, size, j));
    if (fx_recheck(&f)) {
        return 1;
    }

    /* A slice and a copy of the result, with other partitions, in memory. */
    caterva_storage_t ds;
    memset(&ds, 0, sizeof(ds));
    int32_t chunk[3] = {10, 4, 8}, block[3] = {5, 4, 3};
    for (int i = 0; i < 3; i++) {
        ds.chunkshape[i] = chunk[i];
        ds.blockshape[i] = block[i];
    }
    ds.contiguous = true;
    int64_t lo[CATERVA_MAX_DIM] = {4, 1, 3}, hi[CATERVA_MAX_DIM] = {f.m.shape[0] - 2, f.m.shape[1], f.m.shape[2] - 1};
    caterva_array_t *out = NULL;
    model_t om;
    CHECK_OK(caterva_get_slice(f.ctx, f.arr, lo, hi, &ds, &out));
    CHECK(m_slice(&f.m, lo, hi, chunk, block, &om) == 0);
    if (m_check(f.ctx, out, &om)) {
        return 1;
    }
    CHECK_OK(caterva_free(f.ctx, &out));
    m_free(&om);
    int64_t zero[CATERVA_MAX_DIM] = {0};
    CHECK_OK(caterva_copy(f.ctx, f.arr, &ds, &out));
    CHECK(m_slice(&f.m, zero, f.m.shape, chunk, block, &om) == 0);
    if (m_check(f.ctx, out, &om)) {
        return 1;
    }
    CHECK_OK(caterva_free(f.ctx, &out));
    m_free(&om);
    return fx_end(&f);
}

/* A caterva_full array copied and sliced into other partitions: every item
 * holds the fill value. */
static int test_full_copy_slice(const test_case_t *tc) {
    if (m_skip(tc)) {
        return 0;
    }
    fixture_t f;
    CHECK(fx_setup(&f, tc, "full_copy_src") == 0);
    uint8_t fill[8] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};
    CHECK_OK(caterva_full(f.ctx, &f.params, &f.storage, fill, &f.arr));
    CHECK(m_init_value(&f.m, tc, h_get(fill, 0, tc->itemsize)) == 0);
    int32_t chunk[CATERVA_MAX_DIM] = {0}, block[CATERVA_MAX_DIM] = {0};
    for (int i = 0; i < f.m.ndim; i++) {
        chunk[i] = 5;
        block[i] = 2;
    }
    for (size_t d = 0; d < 4; d++) {
        char dpath[64];
        caterva_storage_t ds;
        CHECK(m_dest(f.ctx, &BACKENDS[d], "ctest_full_dst", f.m.ndim, chunk, block, dpath, &ds) == 0);
        caterva_array_t *out = NULL;
        model_t om;
        int64_t zero[CATERVA_MAX_DIM] = {0}, lo[CATERVA_MAX_DIM] = {0}, hi[CATERVA_MAX_DIM] = {0};
        if (d % 2 == 0) {
            CHECK_OK(caterva_copy(f.ctx, f.arr, &ds, &out));
            CHECK(m_slice(&f.m, zero, f.m.shape, chunk, block, &om) == 0);
        } else {
            for (int i = 0; i < f.m.ndim; i++) {
                lo[i] = f.m.shape[i] / 4;
                hi[i] = f.m.shape[i] - 1;
            }
            CHECK_OK(caterva_get_slice(f.ctx, f.arr, lo, hi, &ds, &out));
            CHECK(m_slice(&f.m, lo, hi, chunk, block, &om) == 0);
        }
        if (m_recheck(f.ctx, &out, ds.urlpath, &om)) {
            return 1;
        }
        CHECK_OK(caterva_free(f.ctx, &out));
        CHECK_OK(caterva_remove(f.ctx, dpath));
        m_free(&om);
    }
    return fx_end(&f);
}

void suite_reshape_mixed(void) {
    static const shape_case_t seq = {3, {30, 20, 12}, {7, 6, 5}, {3, 3, 2}};
    static const shape_case_t full = {2, {13, 11}, {4, 6}, {4, 3}};
    m_run_shape("test_reshape_sequence", test_reshape_sequence, &seq);
    /* Item sizes that are not powers of two (in memory: the storage layer
     * does not depend on the itemsize). */
    static const uint8_t odd[3] = {3, 5, 7};
    for (size_t i = 0; i < 3; i++) {
        for (size_t b = 0; b < 2; b++) {
            test_case_t tc = {odd[i], seq, BACKENDS[b]};
            h_report("test_reshape_sequence", &tc, test_reshape_sequence(&tc));
        }
    }
    m_run_shape("test_full_copy_slice", test_full_copy_slice, &full);
}
