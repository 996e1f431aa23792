/* caterva_delete: removing items [start, start + len) along an axis shifts
 * the rest down; every axis, at the front, inside, at the tail and the whole
 * axis, aligned or not; len 0 is a no-op; deleted items never come back. */
#include <stdlib.h>

#include "reshape_model.h"

static int delete_both(caterva_ctx_t *ctx, caterva_array_t *arr, model_t *m, int axis, int64_t start, int64_t len) {
    CHECK_OK(caterva_delete(ctx, arr, (int8_t)axis, start, len));
    CHECK(m_delete(m, axis, start, len) == 0);
    return m_check(ctx, arr, m);
}

static int test_delete(const test_case_t *tc) {
    if (m_skip(tc)) {
        return 0;
    }
    caterva_ctx_t *ctx = NULL;
    char path[256];
    caterva_params_t params;
    caterva_storage_t storage;
    CHECK_OK(h_setup(tc, "delete", &ctx, path, &params, &storage));
    caterva_array_t *arr = NULL;
    model_t m;
    m_keep_meta(&storage);
    if (m_from_buffer(ctx, tc, &params, &storage, &arr, &m)) {
        return 1;
    }
    if (m_add_vlmeta(ctx, arr)) {
        return 1;
    }
    int8_t ndim = tc->shape.ndim;
    int64_t orig[CATERVA_MAX_DIM];
    memcpy(orig, m.shape, sizeof(orig));
    for (int ax = 0; ax < ndim; ax++) {
        /* Nothing, at the front, in the middle and at the end. */
        CHECK_OK(caterva_delete(ctx, arr, (int8_t)ax, 0, 0));
        CHECK_OK(caterva_delete(ctx, arr, (int8_t)ax, m.shape[ax] / 2, 0));
        CHECK_OK(caterva_delete(ctx, arr, (int8_t)ax, m.shape[ax], 0));
        /* A third of the axis from a third in (unaligned in general). */
        if (delete_both(ctx, arr, &m, ax, m.shape[ax] / 3, m.shape[ax] / 3)) {
            return 1;
        }
        /* The first item. */
        if (m.shape[ax] >= 3 && delete_both(ctx, arr, &m, ax, 0, 1)) {
            return 1;
        }
        /* The last two items. */
        if (m.shape[ax] >= 4 && delete_both(ctx, arr, &m, ax, m.shape[ax] - 2, 2)) {
            return 1;
        }
        /* Exactly one chunk from a chunk boundary, when that leaves something. */
        int64_t c = m.chunkshape[ax];
        if (c > 0 && m.shape[ax] > c && delete_both(ctx, arr, &m, ax, 0, c)) {
            return 1;
        }
    }
    if (m_recheck(ctx, &arr, path, &m)) {
        return 1;
    }

    /* Growing back to the original shape at the end shows zeros, also inside
     * the chunks that held the deleted items. */
    int64_t shape[CATERVA_MAX_DIM] = {0};
    for (int i = 0; i < ndim; i++) {
        shape[i] = m.chunkshape[i] > 0 ? orig[i] : m.shape[i];
    }
    CHECK_OK(caterva_resize(ctx, arr, shape, NULL));
    CHECK(m_resize(&m, shape, NULL) == 0);
    if (m_check(ctx, arr, &m)) {
        return 1;
    }

    /* The whole first axis. */
    if (ndim > 0) {
        if (delete_both(ctx, arr, &m, 0, 0, m.shape[0])) {
            return 1;
        }
        CHECK(arr->nitems == 0);
        if (m_recheck(ctx, &arr, path, &m)) {
            return 1;
        }
    }
    /* User metalayers and vlmetalayers survive. */
    if (m_expect_kept(ctx, arr)) {
        return 1;
    }
    return m_finish(&ctx, &arr, &m, path);
}

/* Deletes across chunk boundaries in a larger 2-D array: every start in a
 * range and lengths 1, a block, a chunk, a chunk plus one, on either axis. */
static int test_delete_positions(const test_case_t *tc) {
    if (tc->backend.persistent || tc->itemsize == 2 || tc->itemsize == 4) {
        return 0; /* test_delete covers the disk and the other itemsizes */
    }
    caterva_ctx_t *ctx = NULL;
    char path[256];
    caterva_params_t params;
    caterva_storage_t storage;
    CHECK_OK(h_setup(tc, "delete_positions", &ctx, path, &params, &storage));
    static const int64_t lens[4] = {1, 3, 7, 8};
    for (int ax = 0; ax < 2; ax++) {
        for (int64_t start = 0; start < 16; start += 4) {
            for (int l = 0; l < 4; l++) {
                caterva_array_t *arr = NULL;
                model_t m;
                if (m_from_buffer(ctx, tc, &params, &storage, &arr, &m)) {
                    return 1;
                }
                int64_t len = lens[l];
                if (start + len > m.shape[ax]) {
                    len = m.shape[ax] - start;
                }
                if (delete_both(ctx, arr, &m, ax, start, len)) {
                    fprintf(stderr, "    delete axis %d, start %" PRId64 ", len %" PRId64 "\n", ax, start, len);
                    return 1;
                }
                CHECK_OK(caterva_free(ctx, &arr));
                m_free(&m);
            }
        }
    }
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

void suite_delete(void) {
    static const shape_case_t grid = {2, {18, 17}, {7, 6}, {3, 4}};
    RUN_ALL_CASES(test_delete);
    m_run_shape("test_delete_positions", test_delete_positions, &grid);
}
