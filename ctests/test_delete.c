/* caterva_delete: removing items [start, start + len) along an axis shifts
 * the rest down; every axis, at the front, inside, at the tail and the whole
 * axis, aligned or not; len 0 is a no-op; deleted items never come back. */
#include <stdlib.h>

#include "reshape_model.h"

/* Delete from f's array and model the same way, then check the array. */
static int delete_both(fixture_t *f, int axis, int64_t start, int64_t len) {
    CHECK_OK(caterva_delete(f->ctx, f->arr, (int8_t)axis, start, len));
    CHECK(m_delete(&f->m, axis, start, len) == 0);
    return fx_check(f);
}

static int test_delete(const test_case_t *tc) {
    fixture_t f;
    FX_BEGIN(&f, tc, "delete", true);
    int8_t ndim = tc->shape.ndim;
    int64_t orig[CATERVA_MAX_DIM];
    memcpy(orig, f.m.shape, sizeof(orig));
    for (int ax = 0; ax < ndim; ax++) {
        /* Nothing, at the front, in the middle and at the end. */
        CHECK_OK(caterva_delete(f.ctx, f.arr, (int8_t)ax, 0, 0));
        CHECK_OK(caterva_delete(f.ctx, f.arr, (int8_t)ax, f.m.shape[ax] / 2, 0));
        CHECK_OK(caterva_delete(f.ctx, f.arr, (int8_t)ax, f.m.shape[ax], 0));
        /* A third of the axis from a third in (unaligned in general). */
        if (delete_both(&f, ax, f.m.shape[ax] / 3, f.m.shape[ax] / 3)) {
            return 1;
        }
        /* The first item. */
        if (f.m.shape[ax] >= 3 && delete_both(&f, ax, 0, 1)) {
            return 1;
        }
        /* The last two items. */
        if (f.m.shape[ax] >= 4 && delete_both(&f, ax, f.m.shape[ax] - 2, 2)) {
            return 1;
        }
        /* Exactly one chunk from a chunk boundary, when that leaves something. */
        int64_t c = f.m.chunkshape[ax];
        if (c > 0 && f.m.shape[ax] > c && delete_both(&f, ax, 0, c)) {
            return 1;
        }
    }
    if (fx_recheck(&f)) {
        return 1;
    }

    /* Growing back to the original shape at the end shows zeros, also inside
     * the chunks that held the deleted items. */
    int64_t shape[CATERVA_MAX_DIM] = {0};
    for (int i = 0; i < ndim; i++) {
        shape[i] = f.m.chunkshape[i] > 0 ? orig[i] : f.m.shape[i];
    }
    CHECK_OK(caterva_resize(f.ctx, f.arr, shape, NULL));
    CHECK(m_resize(&f.m, shape, NULL) == 0);
    if (fx_check(&f)) {
        return 1;
    }

    /* The whole first axis. */
    if (ndim > 0) {
        if (delete_both(&f, 0, 0, f.m.shape[0])) {
            return 1;
        }
        CHECK(f.arr->nitems == 0);
        if (fx_recheck(&f)) {
            return 1;
        }
    }
    return fx_end(&f);
}

/* Deletes across chunk boundaries in a larger 2-D array: every start in a
 * range and lengths 1, a block, a chunk, a chunk plus one, on either axis. */
static int test_delete_positions(const test_case_t *tc) {
    if (tc->backend.persistent || tc->itemsize == 2 || tc->itemsize == 4) {
        return 0; /* test_delete covers the disk and the other itemsizes */
    }
    fixture_t f;
    CHECK(fx_setup(&f, tc, "delete_positions") == 0);
    static const int64_t lens[4] = {1, 3, 7, 8};
    for (int ax = 0; ax < 2; ax++) {
        for (int64_t start = 0; start < 16; start += 4) {
            for (int l = 0; l < 4; l++) {
                if (fx_create(&f, tc, false)) {
                    return 1;
                }
                int64_t len = lens[l];
                if (start + len > f.m.shape[ax]) {
                    len = f.m.shape[ax] - start;
                }
                if (delete_both(&f, ax, start, len)) {
                    fprintf(stderr, "    delete axis %d, start %" PRId64 ", len %" PRId64 "\n", ax, start, len);
                    return 1;
                }
                CHECK_OK(caterva_free(f.ctx, &f.arr));
                m_free(&f.m);
            }
        }
    }
    CHECK_OK(caterva_ctx_free(&f.ctx));
    return 0;
}

void suite_delete(void) {
    static const shape_case_t grid = {2, {18, 17}, {7, 6}, {3, 4}};
    RUN_ALL_CASES(test_delete);
    m_run_shape("test_delete_positions", test_delete_positions, &grid);
}
