/* caterva_insert and caterva_append: a buffer of whole slabs appears at the
 * insert position along the axis and the rest shifts; every axis, positions
 * at the front, inside and at the end, slab counts below, at and above the
 * chunkshape; buffersize 0 is a no-op; arrays that start with an empty axis
 * grow by appends (streaming rows into a file) and reopen from disk. */
#include <stdlib.h>

#include "reshape_model.h"

/* Insert k slabs (values from base) at pos along axis into f's array and model,
 * then check the array. append: use caterva_append (pos must be the end). */
static int insert_both(fixture_t *f, int axis, int64_t pos, int64_t k, int64_t base, bool append) {
    model_t *m = &f->m;
    int64_t nbytes = 0;
    uint8_t *slab = m_slab(m, axis, k, base, &nbytes);
    CHECK(slab != NULL);
    uint8_t *copy = malloc((size_t)nbytes + 1);
    CHECK(copy != NULL);
    memcpy(copy, slab, (size_t)nbytes);
    if (append) {
        CHECK_OK(caterva_append(f->ctx, f->arr, slab, nbytes, (int8_t)axis));
    } else {
        CHECK_OK(caterva_insert(f->ctx, f->arr, slab, nbytes, (int8_t)axis, pos));
    }
    /* The buffer is not modified. */
    CHECK(memcmp(copy, slab, (size_t)nbytes) == 0);
    CHECK(m_insert(m, axis, pos, k, slab) == 0);
    free(copy);
    free(slab);
    return fx_check(f);
}

/* Whether a slab along axis holds at least one item (else k is undefined). */
static bool slab_has_items(const model_t *m, int axis) {
    for (int i = 0; i < m->ndim; i++) {
        if (i != axis && m->shape[i] == 0) {
            return false;
        }
    }
    return true;
}

/* On every axis (with a non-zero chunkshape): inserts inside, at the front
 * and at the end, of 1, 2, a chunk's worth and more slabs. */
static int test_insert(const test_case_t *tc) {
    fixture_t f;
    FX_BEGIN(&f, tc, "insert", true);
    int8_t ndim = tc->shape.ndim;
    int64_t base = 1000;
    /* buffersize 0 inserts nothing, on any axis. */
    for (int ax = 0; ax < ndim; ax++) {
        uint8_t dummy[8] = {0};
        CHECK_OK(caterva_insert(f.ctx, f.arr, dummy, 0, (int8_t)ax, f.m.shape[ax] / 2));
    }
    if (fx_check(&f)) {
        return 1;
    }
    for (int ax = 0; ax < ndim; ax++) {
        if (f.m.chunkshape[ax] == 0 || !slab_has_items(&f.m, ax)) {
            continue;
        }
        /* Round 0: inside (unaligned), by a chunk plus one; round 1: at the
         * front, by one; round 2: at the end, by two (first axes) or exactly
         * a chunk. */
        int64_t c = f.m.chunkshape[ax];
        int64_t k[3] = {c + 1, 1, ax < 2 ? 2 : c};
        for (int round = 0; round < 3; round++) {
            if (!m_busy_axis(ndim, ax, round)) {
                continue;
            }
            int64_t pos = round == 0 ? f.m.shape[ax] / 2 : round == 1 ? 0 : f.m.shape[ax];
            if (insert_both(&f, ax, pos, m_amount(ndim, k[round]), base, false)) {
                return 1;
            }
            base += 1000;
        }
    }
    if (fx_recheck(&f)) {
        return 1;
    }
    /* The reopened array takes inserts too. */
    if (ndim > 0 && f.m.chunkshape[0] > 0 && slab_has_items(&f.m, 0)) {
        int64_t pos = 1 < f.m.shape[0] ? 1 : 0;
        if (insert_both(&f, 0, pos, m_amount(ndim, 3), base, false) || fx_recheck(&f)) {
            return 1;
        }
    }
    return fx_end(&f);
}

/* Appends on every axis, before and after reopening. */
static int test_append(const test_case_t *tc) {
    fixture_t f;
    FX_BEGIN(&f, tc, "append", false);
    int8_t ndim = tc->shape.ndim;
    int64_t base = 500;
    for (int round = 0; round < 2; round++) {
        for (int ax = 0; ax < ndim; ax++) {
            uint8_t dummy[8] = {0};
            CHECK_OK(caterva_append(f.ctx, f.arr, dummy, 0, (int8_t)ax));
            if (f.m.chunkshape[ax] == 0 || !slab_has_items(&f.m, ax) || !m_busy_axis(ndim, ax, round)) {
                continue;
            }
            if (insert_both(&f, ax, f.m.shape[ax], m_amount(ndim, 1 + (ax + round) % 3), base, true)) {
                return 1;
            }
            base += 777;
        }
        if (fx_recheck(&f)) {
            return 1;
        }
    }
    return fx_end(&f);
}

/* An array created with an empty first axis but a real chunkshape on it
 * grows by appends along that axis, reopened from disk between appends;
 * then it grows along another axis too. */
static int test_append_stream(const test_case_t *tc) {
    if (m_skip(tc)) {
        return 0;
    }
    fixture_t f;
    CHECK(fx_setup(&f, tc, "append_stream") == 0);
    f.with_meta = true;
    m_keep_meta(&f.storage);
    CHECK_OK(caterva_zeros(f.ctx, &f.params, &f.storage, &f.arr));
    if (m_add_vlmeta(f.ctx, f.arr)) {
        return 1;
    }
    CHECK(m_init(&f.m, tc) == 0);
    CHECK(m_nitems(&f.m) == 0);
    if (fx_check(&f)) {
        return 1;
    }
    static const int64_t rows[] = {1, 2, 7, 3, 10, 1, 14};
    int64_t base = 1;
    for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
        if (insert_both(&f, 0, f.m.shape[0], rows[r], base, true)) {
            return 1;
        }
        base += rows[r] * 1000;
        if (fx_recheck(&f)) {
            return 1;
        }
    }
    CHECK(f.arr->shape[0] == 38);
    /* Along the last axis, then rows again. */
    int last = tc->shape.ndim - 1;
    if (last > 0) {
        if (insert_both(&f, last, f.m.shape[last], 2, base, true)) {
            return 1;
        }
        base += 1000;
    }
    if (insert_both(&f, 0, f.m.shape[0], 4, base, true) || fx_recheck(&f)) {
        return 1;
    }
    /* Inserting rows at the front of the streamed array works as well. */
    if (insert_both(&f, 0, 0, 2, base + 5000, false) || fx_recheck(&f)) {
        return 1;
    }
    return fx_end(&f);
}

void suite_insert(void) {
    static const shape_case_t stream2 = {2, {0, 10}, {7, 5}, {3, 5}};
    static const shape_case_t stream1 = {1, {0}, {8}, {3}};
    static const shape_case_t stream3 = {3, {0, 3, 4}, {2, 3, 4}, {1, 3, 2}};
    RUN_ALL_CASES(test_insert);
    RUN_ALL_CASES(test_append);
    m_run_shape("test_append_stream", test_append_stream, &stream2);
    m_run_shape("test_append_stream", test_append_stream, &stream1);
    m_run_shape("test_append_stream", test_append_stream, &stream3);
}
