/* caterva_resize: growing and shrinking at the end or anywhere inside the
 * array, on one axis or several at once, with chunk-aligned and unaligned
 * positions and lengths; new items read 0 (or a caterva_full array's fill
 * value inside its old chunks), removed items never come back, the public
 * fields follow and the result persists. */
#include <stdlib.h>

#include "reshape_model.h"

/* Resize f's array and model the same way, then check the array. */
static int resize_both(fixture_t *f, const int64_t *new_shape, const int64_t *start) {
    int64_t shape_c[CATERVA_MAX_DIM], start_c[CATERVA_MAX_DIM];
    memcpy(shape_c, new_shape, sizeof(shape_c));
    if (start != NULL) {
        memcpy(start_c, start, sizeof(start_c));
    }
    CHECK_OK(caterva_resize(f->ctx, f->arr, shape_c, start != NULL ? start_c : NULL));
    /* The arguments are not modified. */
    CHECK(memcmp(shape_c, new_shape, sizeof(shape_c)) == 0);
    CHECK(start == NULL || memcmp(start_c, start, sizeof(start_c)) == 0);
    CHECK(m_resize(&f->m, new_shape, start) == 0);
    return fx_check(f);
}

/* Grow at the end (start NULL), then inside, then at the front; axes whose
 * chunkshape is 0 (an empty axis) keep their length. */
static int test_resize_grow(const test_case_t *tc) {
    fixture_t f;
    FX_BEGIN(&f, tc, "resize_grow", true);
    int8_t ndim = tc->shape.ndim;
    int64_t shape[CATERVA_MAX_DIM] = {0}, start[CATERVA_MAX_DIM] = {0};

    /* The same shape: nothing changes, with or without start. */
    memcpy(shape, f.m.shape, sizeof(shape));
    if (resize_both(&f, shape, NULL) || resize_both(&f, shape, start)) {
        return 1;
    }

    /* At the end, by an unaligned amount (and one that may cross chunks). */
    for (int i = 0; i < ndim; i++) {
        int64_t k = m_amount(ndim, 1 + f.m.shape[i] / 2);
        shape[i] = f.m.shape[i] + (f.m.chunkshape[i] > 0 && m_busy_axis(ndim, i, 0) ? k : 0);
    }
    if (resize_both(&f, shape, NULL)) {
        return 1;
    }

    /* Inside, at an unaligned position, by a whole chunk (first axis) or by
     * an unaligned amount (the others). */
    for (int i = 0; i < ndim; i++) {
        start[i] = f.m.shape[i] / 3;
        int64_t k = m_amount(ndim, i == 0 ? f.m.chunkshape[i] : 2);
        shape[i] = f.m.shape[i] + (f.m.chunkshape[i] > 0 && m_busy_axis(ndim, i, 1) ? k : 0);
    }
    if (resize_both(&f, shape, start)) {
        return 1;
    }

    /* At the front, and explicitly at the end (start == shape). */
    for (int i = 0; i < ndim; i++) {
        start[i] = i % 2 == 0 ? 0 : f.m.shape[i];
        shape[i] = f.m.shape[i] + (f.m.chunkshape[i] > 0 && m_busy_axis(ndim, i, 2) ? 1 : 0);
    }
    if (resize_both(&f, shape, start)) {
        return 1;
    }

    if (fx_recheck(&f)) {
        return 1;
    }
    /* The reopened array grows as well. */
    if (ndim > 0 && f.m.chunkshape[0] > 0) {
        memcpy(shape, f.m.shape, sizeof(shape));
        shape[0] += m_amount(ndim, 3);
        if (resize_both(&f, shape, NULL) || fx_recheck(&f)) {
            return 1;
        }
    }
    return fx_end(&f);
}

/* Shrink at the end and inside; growing back shows zeros, not the removed
 * items; shrinking an axis to 0 and growing it again. */
static int test_resize_shrink(const test_case_t *tc) {
    fixture_t f;
    FX_BEGIN(&f, tc, "resize_shrink", false);
    int8_t ndim = tc->shape.ndim;
    int64_t shape[CATERVA_MAX_DIM] = {0}, start[CATERVA_MAX_DIM] = {0}, orig[CATERVA_MAX_DIM] = {0};
    memcpy(orig, f.m.shape, sizeof(orig));

    /* At the end, leaving a partial last chunk in general. */
    for (int i = 0; i < ndim; i++) {
        shape[i] = f.m.shape[i] - f.m.shape[i] / 3;
    }
    if (resize_both(&f, shape, NULL)) {
        return 1;
    }
    /* Inside, at unaligned positions. */
    for (int i = 0; i < ndim; i++) {
        start[i] = f.m.shape[i] / 4;
        shape[i] = f.m.shape[i] - f.m.shape[i] / 3;
    }
    if (resize_both(&f, shape, start)) {
        return 1;
    }
    /* At the front, by one. */
    for (int i = 0; i < ndim; i++) {
        start[i] = 0;
        shape[i] = f.m.shape[i] > 1 ? f.m.shape[i] - 1 : f.m.shape[i];
    }
    if (resize_both(&f, shape, start)) {
        return 1;
    }
    if (fx_recheck(&f)) {
        return 1;
    }

    /* Back to the original shape at the end: the new items are zeros, also
     * those inside the chunks that held the removed items. */
    for (int i = 0; i < ndim; i++) {
        shape[i] = f.m.chunkshape[i] > 0 ? orig[i] : f.m.shape[i];
    }
    if (resize_both(&f, shape, NULL)) {
        return 1;
    }
    if (fx_recheck(&f)) {
        return 1;
    }

    /* The first axis down to 0 and up again. */
    if (ndim > 0) {
        memcpy(shape, f.m.shape, sizeof(shape));
        shape[0] = 0;
        if (resize_both(&f, shape, NULL)) {
            return 1;
        }
        CHECK(f.arr->nitems == 0);
        if (fx_recheck(&f)) {
            return 1;
        }
        shape[0] = orig[0] + 1;
        if (resize_both(&f, shape, NULL)) {
            return 1;
        }
        for (int64_t k = 0; k < m_nitems(&f.m); k++) {
            CHECK(f.m.v[k] == 0);
        }
    }
    return fx_end(&f);
}

/* One axis grows while another shrinks, each at its own position. */
static int test_resize_mixed(const test_case_t *tc) {
    if (tc->shape.ndim < 2) {
        return 0;
    }
    fixture_t f;
    FX_BEGIN(&f, tc, "resize_mixed", true);
    int8_t ndim = tc->shape.ndim;
    int64_t shape[CATERVA_MAX_DIM] = {0}, start[CATERVA_MAX_DIM] = {0};
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < ndim; i++) {
            bool grow = (i + round) % 2 == 0;
            if (grow && f.m.chunkshape[i] > 0) {
                start[i] = f.m.shape[i] / 2;
                shape[i] = f.m.shape[i] + m_amount(ndim, 3);
            } else {
                start[i] = f.m.shape[i] / 3;
                shape[i] = f.m.shape[i] - f.m.shape[i] / 2;
            }
        }
        if (resize_both(&f, shape, start)) {
            return 1;
        }
        /* The same with start NULL: at the end. */
        for (int i = 0; i < ndim; i++) {
            bool grow = (i + round) % 2 == 1;
            int64_t k = m_amount(ndim, f.m.chunkshape[i] + 1);
            shape[i] = grow && f.m.chunkshape[i] > 0 ? f.m.shape[i] + k : f.m.shape[i] - f.m.shape[i] / 4;
        }
        if (resize_both(&f, shape, NULL)) {
            return 1;
        }
    }
    if (fx_recheck(&f)) {
        return 1;
    }
    return fx_end(&f);
}

/* Growing a caterva_full array at the end: new items inside the old chunks
 * read the fill value (the chunks' padding), the others read 0; growing it
 * inside gives zeros. */
static int test_resize_full(const test_case_t *tc) {
    if (m_skip(tc) || tc->shape.ndim == 0) {
        return 0;
    }
    fixture_t f;
    CHECK(fx_setup(&f, tc, "resize_full") == 0);
    uint8_t fill[8] = {0xA1, 0xB2, 0xC3, 0xD4, 0xE5, 0xF6, 0x17, 0x28};
    uint64_t fillv = h_get(fill, 0, tc->itemsize);
    CHECK_OK(caterva_full(f.ctx, &f.params, &f.storage, fill, &f.arr));
    CHECK(m_init_value(&f.m, tc, fillv) == 0);
    if (fx_check(&f)) {
        return 1;
    }
    int8_t ndim = tc->shape.ndim;
    int64_t old[CATERVA_MAX_DIM], ext[CATERVA_MAX_DIM], shape[CATERVA_MAX_DIM] = {0};
    memcpy(old, f.m.shape, sizeof(old));
    for (int i = 0; i < ndim; i++) {
        int64_t c = f.m.chunkshape[i];
        ext[i] = c > 0 ? (old[i] + c - 1) / c * c : old[i];
        /* Past the old last chunk on even axes; inside it (when there is
         * padding) on odd ones. From 5-D on, only the first and last axes. */
        bool grow = c > 0 && (ndim <= 4 || i == 0 || i == ndim - 1);
        shape[i] = !grow ? old[i] : (i % 2 == 0 ? old[i] + c + 1 : (ext[i] > old[i] ? ext[i] : old[i] + 1));
    }
    CHECK_OK(caterva_resize(f.ctx, f.arr, shape, NULL));
    CHECK(m_resize(&f.m, shape, NULL) == 0);
    /* New items inside the old extended shape read the fill value. */
    int64_t idx[CATERVA_MAX_DIM] = {0};
    if (m_nitems(&f.m) > 0) {
        do {
            bool is_new = false, in_old_chunk = true;
            for (int i = 0; i < ndim; i++) {
                is_new |= idx[i] >= old[i];
                in_old_chunk &= idx[i] < ext[i];
            }
            if (is_new && in_old_chunk) {
                f.m.v[h_linear(ndim, f.m.shape, idx)] = fillv;
            }
        } while (h_next_index(ndim, f.m.shape, idx));
    }
    if (fx_check(&f) || fx_recheck(&f)) {
        return 1;
    }
    /* A grow inside (not at the end) gives zeros, wherever it falls. */
    if (f.m.chunkshape[0] > 0) {
        memcpy(shape, f.m.shape, sizeof(shape));
        int64_t start[CATERVA_MAX_DIM] = {0};
        start[0] = f.m.shape[0] / 2;
        shape[0] += 2;
        if (resize_both(&f, shape, start) || fx_recheck(&f)) {
            return 1;
        }
    }
    return fx_end(&f);
}

/* The worked example: a full array of shape {10}, chunks {4}: growing to 12
 * gives items 10 and 11 the fill value; growing to 16 directly gives items
 * 10, 11 the fill value and 12..15 zeros. */
static int test_resize_full_example(const test_case_t *tc) {
    if (m_skip(tc)) {
        return 0;
    }
    for (int variant = 0; variant < 2; variant++) {
        fixture_t f;
        CHECK(fx_setup(&f, tc, "resize_full_example") == 0);
        uint8_t fill[8] = {9, 8, 7, 6, 5, 4, 3, 2};
        uint64_t fillv = h_get(fill, 0, tc->itemsize);
        CHECK_OK(caterva_full(f.ctx, &f.params, &f.storage, fill, &f.arr));
        int64_t target = variant == 0 ? 12 : 16;
        int64_t shape[CATERVA_MAX_DIM] = {target};
        CHECK_OK(caterva_resize(f.ctx, f.arr, shape, NULL));
        CHECK(f.arr->shape[0] == target && f.arr->nitems == target && f.arr->extshape[0] == (target + 3) / 4 * 4);
        if (m_reopen(f.ctx, &f.arr, f.path)) {
            return 1;
        }
        uint8_t buf[16 * 8];
        CHECK_OK(caterva_to_buffer(f.ctx, f.arr, buf, target * tc->itemsize));
        for (int64_t i = 0; i < target; i++) {
            uint64_t expected = i < 12 ? fillv : 0;
            if (h_get(buf, i, tc->itemsize) != expected) {
                fprintf(stderr, "    grow to %" PRId64 ": item %" PRId64 " is %" PRIu64 ", expected %" PRIu64 "\n",
                        target, i, h_get(buf, i, tc->itemsize), expected);
            }
            CHECK(h_get(buf, i, tc->itemsize) == expected);
        }
        CHECK_OK(caterva_free(f.ctx, &f.arr));
        if (f.path[0] != '\0') {
            CHECK_OK(caterva_remove(f.ctx, f.path));
        }
        CHECK_OK(caterva_ctx_free(&f.ctx));
    }
    return 0;
}

void suite_resize(void) {
    static const shape_case_t example = {1, {10}, {4}, {2}};
    RUN_ALL_CASES(test_resize_grow);
    RUN_ALL_CASES(test_resize_shrink);
    RUN_ALL_CASES(test_resize_mixed);
    RUN_ALL_CASES(test_resize_full);
    m_run_shape("test_resize_full_example", test_resize_full_example, &example);
}
