/* caterva_squeeze and caterva_squeeze_index: axes of length 1 are dropped
 * (all of them, or those flagged), down to ndim 0; the items keep their
 * C order; the partitions of the other axes stay; the new geometry persists
 * and the squeezed array keeps working. */
#include <stdlib.h>

#include "reshape_model.h"

/* Shapes with length-1 axes beyond those of the shared table. */
static const shape_case_t SQUEEZE_SHAPES[] = {
    {4, {1, 5, 1, 3}, {1, 2, 1, 2}, {1, 1, 1, 2}},
    {3, {4, 1, 1}, {3, 1, 1}, {2, 1, 1}},
    {3, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}},   /* to ndim 0 */
    {1, {1}, {1}, {1}},                     /* to ndim 0 */
    {3, {1, 0, 6}, {1, 0, 4}, {1, 0, 2}},   /* an empty axis stays */
    {5, {2, 1, 9, 1, 1}, {2, 1, 4, 1, 1}, {1, 1, 3, 1, 1}},
};

/* After a squeeze that dropped axes: a set_slice_buffer/get_slice_buffer
 * round trip over the whole array with the new ndim, and the model follows. */
static int still_works(caterva_ctx_t *ctx, caterva_array_t *arr, model_t *m) {
    int64_t n = m_nitems(m);
    if (n == 0) {
        return 0;
    }
    int64_t start[CATERVA_MAX_DIM] = {0}, stop[CATERVA_MAX_DIM] = {0}, bshape[CATERVA_MAX_DIM] = {0};
    for (int i = 0; i < m->ndim; i++) {
        stop[i] = m->shape[i];
        bshape[i] = m->shape[i];
    }
    int64_t nbytes = n * m->itemsize;
    uint8_t *buf = malloc((size_t)nbytes);
    CHECK(buf != NULL);
    for (int64_t i = 0; i < n; i++) {
        m->v[i] = m_trunc((uint64_t)(3 * i + 11), m->itemsize);
        m_put(buf, i, m->itemsize, m->v[i]);
    }
    CHECK_OK(caterva_set_slice_buffer(ctx, buf, bshape, nbytes, start, stop, arr));
    memset(buf, 0, (size_t)nbytes);
    CHECK_OK(caterva_get_slice_buffer(ctx, arr, start, stop, buf, bshape, nbytes));
    for (int64_t i = 0; i < n; i++) {
        CHECK(h_get(buf, i, m->itemsize) == m->v[i]);
    }
    free(buf);
    return m_check(ctx, arr, m);
}

static int test_squeeze(const test_case_t *tc) {
    fixture_t f;
    FX_BEGIN(&f, tc, "squeeze", true);
    bool index[CATERVA_MAX_DIM] = {false};
    int8_t expected_ndim = 0;
    for (int i = 0; i < f.m.ndim; i++) {
        index[i] = f.m.shape[i] == 1;
        expected_ndim += !index[i];
    }
    CHECK_OK(caterva_squeeze(f.ctx, f.arr));
    CHECK(m_squeeze(&f.m, index) == 0);
    CHECK(f.arr->ndim == expected_ndim);
    if (fx_check(&f) || m_check_caterva_meta(f.ctx, f.arr, &f.m)) {
        return 1;
    }
    /* Squeezing again changes nothing. */
    CHECK_OK(caterva_squeeze(f.ctx, f.arr));
    if (fx_check(&f)) {
        return 1;
    }
    if (fx_recheck(&f) || m_check_caterva_meta(f.ctx, f.arr, &f.m)) {
        return 1;
    }
    if (expected_ndim < tc->shape.ndim &&
        (still_works(f.ctx, f.arr, &f.m) || fx_recheck(&f))) {
        return 1;
    }
    return fx_end(&f);
}

/* squeeze_index: one flagged axis at a time, then none, then all of them. */
static int test_squeeze_index(const test_case_t *tc) {
    if (m_skip(tc)) {
        return 0;
    }
    int8_t ndim = tc->shape.ndim;
    for (int ax = -1; ax <= ndim; ax++) {
        /* ax in [0, ndim): that axis alone (when its length is 1);
         * -1: no axis flagged; ndim: every length-1 axis. */
        bool index[CATERVA_MAX_DIM] = {false};
        if (ax >= 0 && ax < ndim) {
            if (tc->shape.shape[ax] != 1) {
                continue;
            }
            index[ax] = true;
        } else if (ax == ndim) {
            bool any = false;
            for (int i = 0; i < ndim; i++) {
                index[i] = tc->shape.shape[i] == 1;
                any |= index[i];
            }
            if (!any) {
                continue; /* the same as ax == -1 */
            }
        }
        fixture_t f;
        if (fx_setup(&f, tc, "squeeze_index") || fx_create(&f, tc, false)) {
            return 1;
        }
        bool copy[CATERVA_MAX_DIM];
        memcpy(copy, index, sizeof(copy));
        CHECK_OK(caterva_squeeze_index(f.ctx, f.arr, index));
        CHECK(memcmp(copy, index, sizeof(copy)) == 0);
        CHECK(m_squeeze(&f.m, index) == 0);
        if (fx_check(&f) || fx_recheck(&f) || m_check_caterva_meta(f.ctx, f.arr, &f.m)) {
            fprintf(stderr, "    squeeze_index flag %d\n", ax);
            return 1;
        }
        if (fx_end(&f)) {
            return 1;
        }
    }
    return 0;
}

void suite_squeeze(void) {
    RUN_ALL_CASES(test_squeeze);
    RUN_ALL_CASES(test_squeeze_index);
    for (size_t s = 0; s < sizeof(SQUEEZE_SHAPES) / sizeof(SQUEEZE_SHAPES[0]); s++) {
        m_run_shape("test_squeeze", test_squeeze, &SQUEEZE_SHAPES[s]);
        m_run_shape("test_squeeze_index", test_squeeze_index, &SQUEEZE_SHAPES[s]);
    }
}
