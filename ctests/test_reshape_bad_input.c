/* Bad input to resize, insert, append, delete, squeeze, squeeze_index,
 * get_slice, copy and the orthogonal selections: each call returns the
 * documented code and leaves the array exactly as it was (public fields and
 * items, and on disk after reopening); failed constructors leave *array and
 * the destination path alone. */
#include <stdlib.h>

#include "reshape_model.h"

static int sentinel_object;
#define SENTINEL_ARRAY ((caterva_array_t *)&sentinel_object)
#define SENT 0xEE

/* The array of every test here: shape {10, 1, 8}, chunks {4, 1, 3}, blocks
 * {2, 1, 2}, items from h_fill_buffer. */
static const shape_case_t BASE = {3, {10, 1, 8}, {4, 1, 3}, {2, 1, 2}};

/* Expect rc from a call, then that the array still matches the model. */
#define EXPECT(call, rc)                                                   \
    do {                                                                   \
        CHECK_RC(call, rc);                                                \
        if (fx_check(&f)) {                                               \
            fprintf(stderr, "    array changed by %s\n", #call);           \
            return 1;                                                      \
        }                                                                  \
    } while (0)

/* Common start: the array and its model. */
#define SETUP(tag)                                                         \
    if (h_skip_disk_itemsize(tc)) {                                        \
        return 0;                                                          \
    }                                                                      \
    fixture_t f;                                                           \
    if (fx_setup(&f, tc, tag) || fx_create(&f, tc, false)) {               \
        return 1;                                                          \
    }

/* Common end: nothing reached the disk either. */
static int finish(fixture_t *f) {
    return fx_recheck(f) || fx_end(f);
}

static int test_bad_resize(const test_case_t *tc) {
    SETUP("bad_resize");
    int64_t shape[CATERVA_MAX_DIM] = {10, 1, 8};
    int64_t start[CATERVA_MAX_DIM] = {0, 0, 0};

    EXPECT(caterva_resize(NULL, f.arr, shape, start), CATERVA_ERR_NULL_POINTER);
    EXPECT(caterva_resize(f.ctx, NULL, shape, start), CATERVA_ERR_NULL_POINTER);
    EXPECT(caterva_resize(f.ctx, f.arr, NULL, start), CATERVA_ERR_NULL_POINTER);

    /* Negative shapes, alone or beside a valid grow. */
    shape[0] = -1;
    EXPECT(caterva_resize(f.ctx, f.arr, shape, NULL), CATERVA_ERR_INVALID_ARGUMENT);
    shape[0] = 12;
    shape[2] = INT64_MIN;
    EXPECT(caterva_resize(f.ctx, f.arr, shape, NULL), CATERVA_ERR_INVALID_ARGUMENT);
    shape[2] = 8;

    /* A grow with start past the end, or negative. */
    start[0] = 11;
    EXPECT(caterva_resize(f.ctx, f.arr, shape, start), CATERVA_ERR_INVALID_ARGUMENT);
    start[0] = -1;
    EXPECT(caterva_resize(f.ctx, f.arr, shape, start), CATERVA_ERR_INVALID_ARGUMENT);
    start[0] = 0;
    /* A shrink of 4 from 7: past the end. */
    shape[0] = 6;
    start[0] = 7;
    EXPECT(caterva_resize(f.ctx, f.arr, shape, start), CATERVA_ERR_INVALID_ARGUMENT);
    start[0] = -2;
    EXPECT(caterva_resize(f.ctx, f.arr, shape, start), CATERVA_ERR_INVALID_ARGUMENT);
    /* start out of range on an axis that keeps its length, beside a valid shrink. */
    start[0] = 0;
    start[2] = 9;
    EXPECT(caterva_resize(f.ctx, f.arr, shape, start), CATERVA_ERR_INVALID_ARGUMENT);
    start[2] = -1;
    EXPECT(caterva_resize(f.ctx, f.arr, shape, start), CATERVA_ERR_INVALID_ARGUMENT);
    /* More chunks than a super-chunk can index (2^38 rows in chunks of 4):
     * an error, where planning it used to abort the process on the
     * allocation (under a 4 GiB address-space limit: 6979321856 bytes). */
    shape[0] = (int64_t)1 << 38;
    shape[2] = 8;
    EXPECT(caterva_resize(f.ctx, f.arr, shape, NULL), CATERVA_ERR_INVALID_ARGUMENT);
    shape[0] = 10;
    return finish(&f);
}

static int test_bad_insert_append(const test_case_t *tc) {
    SETUP("bad_insert");
    /* Slabs: along axis 0, 1 * 8 items; along 1, 10 * 8; along 2, 10 * 1. */
    int64_t slab[3] = {8 * tc->itemsize, 80 * tc->itemsize, 10 * tc->itemsize};
    int64_t cap = 4 * 80 * tc->itemsize;
    uint8_t *buf = malloc((size_t)cap);
    CHECK(buf != NULL);
    memset(buf, 0x33, (size_t)cap);

    EXPECT(caterva_insert(NULL, f.arr, buf, slab[0], 0, 0), CATERVA_ERR_NULL_POINTER);
    EXPECT(caterva_insert(f.ctx, NULL, buf, slab[0], 0, 0), CATERVA_ERR_NULL_POINTER);
    EXPECT(caterva_insert(f.ctx, f.arr, NULL, slab[0], 0, 0), CATERVA_ERR_NULL_POINTER);
    EXPECT(caterva_append(NULL, f.arr, buf, slab[0], 0), CATERVA_ERR_NULL_POINTER);
    EXPECT(caterva_append(f.ctx, NULL, buf, slab[0], 0), CATERVA_ERR_NULL_POINTER);
    EXPECT(caterva_append(f.ctx, f.arr, NULL, slab[0], 0), CATERVA_ERR_NULL_POINTER);

    /* Axes out of range. */
    static const int8_t bad_axes[4] = {-1, 3, CATERVA_MAX_DIM, INT8_MIN};
    for (int k = 0; k < 4; k++) {
        EXPECT(caterva_insert(f.ctx, f.arr, buf, slab[0], bad_axes[k], 0), CATERVA_ERR_INVALID_ARGUMENT);
        EXPECT(caterva_append(f.ctx, f.arr, buf, slab[0], bad_axes[k]), CATERVA_ERR_INVALID_ARGUMENT);
    }
    /* insert_start past the end, or negative. */
    EXPECT(caterva_insert(f.ctx, f.arr, buf, slab[0], 0, 11), CATERVA_ERR_INVALID_ARGUMENT);
    EXPECT(caterva_insert(f.ctx, f.arr, buf, slab[0], 0, -1), CATERVA_ERR_INVALID_ARGUMENT);
    EXPECT(caterva_insert(f.ctx, f.arr, buf, slab[2], 2, 9), CATERVA_ERR_INVALID_ARGUMENT);
    EXPECT(caterva_insert(f.ctx, f.arr, buf, slab[1], 1, 2), CATERVA_ERR_INVALID_ARGUMENT);
    /* Buffers that are not a whole number of slabs, and negative sizes. */
    for (int ax = 0; ax < 3; ax++) {
        int64_t bad[4] = {slab[ax] - tc->itemsize, slab[ax] + tc->itemsize, 2 * slab[ax] + 1, -slab[ax]};
        for (int k = 0; k < 4; k++) {
            EXPECT(caterva_insert(f.ctx, f.arr, buf, bad[k], (int8_t)ax, 0), CATERVA_ERR_INVALID_ARGUMENT);
            EXPECT(caterva_append(f.ctx, f.arr, buf, bad[k], (int8_t)ax), CATERVA_ERR_INVALID_ARGUMENT);
        }
    }
    /* After all that, a valid append still works. */
    CHECK_OK(caterva_append(f.ctx, f.arr, buf, slab[0], 0));
    CHECK(m_insert(&f.m, 0, 10, 1, buf) == 0);
    if (fx_check(&f)) {
        return 1;
    }
    free(buf);
    return finish(&f);
}

static int test_bad_delete(const test_case_t *tc) {
    SETUP("bad_delete");
    EXPECT(caterva_delete(NULL, f.arr, 0, 0, 1), CATERVA_ERR_NULL_POINTER);
    EXPECT(caterva_delete(f.ctx, NULL, 0, 0, 1), CATERVA_ERR_NULL_POINTER);
    EXPECT(caterva_delete(f.ctx, f.arr, -1, 0, 1), CATERVA_ERR_INVALID_ARGUMENT);
    EXPECT(caterva_delete(f.ctx, f.arr, 3, 0, 1), CATERVA_ERR_INVALID_ARGUMENT);
    EXPECT(caterva_delete(f.ctx, f.arr, INT8_MAX, 0, 1), CATERVA_ERR_INVALID_ARGUMENT);
    EXPECT(caterva_delete(f.ctx, f.arr, 0, -1, 1), CATERVA_ERR_INVALID_ARGUMENT);
    EXPECT(caterva_delete(f.ctx, f.arr, 0, 0, -1), CATERVA_ERR_INVALID_ARGUMENT);
    EXPECT(caterva_delete(f.ctx, f.arr, 0, 2, INT64_MIN), CATERVA_ERR_INVALID_ARGUMENT);
    /* Past the end: start + len > shape, start > shape. */
    EXPECT(caterva_delete(f.ctx, f.arr, 0, 8, 3), CATERVA_ERR_INVALID_ARGUMENT);
    EXPECT(caterva_delete(f.ctx, f.arr, 0, 0, 11), CATERVA_ERR_INVALID_ARGUMENT);
    EXPECT(caterva_delete(f.ctx, f.arr, 0, 11, 0), CATERVA_ERR_INVALID_ARGUMENT);
    EXPECT(caterva_delete(f.ctx, f.arr, 1, 1, 1), CATERVA_ERR_INVALID_ARGUMENT);
    EXPECT(caterva_delete(f.ctx, f.arr, 2, 7, 2), CATERVA_ERR_INVALID_ARGUMENT);
    /* An overflowing start + len. */
    EXPECT(caterva_delete(f.ctx, f.arr, 2, 4, INT64_MAX), CATERVA_ERR_INVALID_ARGUMENT);
    return finish(&f);
}

static int test_bad_squeeze(const test_case_t *tc) {
    SETUP("bad_squeeze");
    bool index[CATERVA_MAX_DIM] = {false, true, false};
    EXPECT(caterva_squeeze(NULL, f.arr), CATERVA_ERR_NULL_POINTER);
    EXPECT(caterva_squeeze(f.ctx, NULL), CATERVA_ERR_NULL_POINTER);
    EXPECT(caterva_squeeze_index(NULL, f.arr, index), CATERVA_ERR_NULL_POINTER);
    EXPECT(caterva_squeeze_index(f.ctx, NULL, index), CATERVA_ERR_NULL_POINTER);
    EXPECT(caterva_squeeze_index(f.ctx, f.arr, NULL), CATERVA_ERR_NULL_POINTER);
    /* A flagged axis of length 10 or 8 (alone, or beside the length-1 axis). */
    bool bad1[CATERVA_MAX_DIM] = {true, false, false};
    bool bad2[CATERVA_MAX_DIM] = {false, true, true};
    bool bad3[CATERVA_MAX_DIM] = {true, true, true};
    EXPECT(caterva_squeeze_index(f.ctx, f.arr, bad1), CATERVA_ERR_INVALID_INDEX);
    EXPECT(caterva_squeeze_index(f.ctx, f.arr, bad2), CATERVA_ERR_INVALID_INDEX);
    EXPECT(caterva_squeeze_index(f.ctx, f.arr, bad3), CATERVA_ERR_INVALID_INDEX);
    return finish(&f);
}

/* Destination storage for get_slice/copy: backend b of BACKENDS, at dpath. */
static void dest_storage(caterva_storage_t *ds, const backend_t *b, char *dpath) {
    memset(ds, 0, sizeof(*ds));
    ds->chunkshape[0] = 3;
    ds->chunkshape[1] = 1;
    ds->chunkshape[2] = 4;
    ds->blockshape[0] = 2;
    ds->blockshape[1] = 1;
    ds->blockshape[2] = 2;
    ds->contiguous = b->contiguous;
    ds->urlpath = b->persistent ? dpath : NULL;
}

static int test_bad_get_slice_copy(const test_case_t *tc) {
    SETUP("bad_get_slice_src");
    int64_t start[CATERVA_MAX_DIM] = {1, 0, 2}, stop[CATERVA_MAX_DIM] = {7, 1, 8};
    for (size_t d = 0; d < 4; d++) {
        char dpath[64];
        snprintf(dpath, sizeof(dpath), "%s", BACKENDS[d].contiguous ? "ctest_bad_dst.b2frame" : "ctest_bad_dst.b2nd");
        CHECK_OK(caterva_remove(f.ctx, dpath));
        caterva_storage_t ds;
        dest_storage(&ds, &BACKENDS[d], dpath);
        caterva_array_t *out = SENTINEL_ARRAY;

#define EXPECT_NEW(call, rc)                                                \
    do {                                                                    \
        EXPECT(call, rc);                                                   \
        CHECK(out == SENTINEL_ARRAY);                                       \
        CHECK(!h_exists(dpath));                                            \
    } while (0)

        EXPECT_NEW(caterva_get_slice(NULL, f.arr, start, stop, &ds, &out), CATERVA_ERR_NULL_POINTER);
        EXPECT_NEW(caterva_get_slice(f.ctx, NULL, start, stop, &ds, &out), CATERVA_ERR_NULL_POINTER);
        EXPECT_NEW(caterva_get_slice(f.ctx, f.arr, NULL, stop, &ds, &out), CATERVA_ERR_NULL_POINTER);
        EXPECT_NEW(caterva_get_slice(f.ctx, f.arr, start, NULL, &ds, &out), CATERVA_ERR_NULL_POINTER);
        EXPECT_NEW(caterva_get_slice(f.ctx, f.arr, start, stop, NULL, &out), CATERVA_ERR_NULL_POINTER);
        EXPECT_NEW(caterva_get_slice(f.ctx, f.arr, start, stop, &ds, NULL), CATERVA_ERR_NULL_POINTER);
        EXPECT_NEW(caterva_copy(NULL, f.arr, &ds, &out), CATERVA_ERR_NULL_POINTER);
        EXPECT_NEW(caterva_copy(f.ctx, NULL, &ds, &out), CATERVA_ERR_NULL_POINTER);
        EXPECT_NEW(caterva_copy(f.ctx, f.arr, NULL, &out), CATERVA_ERR_NULL_POINTER);
        EXPECT_NEW(caterva_copy(f.ctx, f.arr, &ds, NULL), CATERVA_ERR_NULL_POINTER);

        /* Slices out of range: start > stop, stop > shape, start < 0. */
        int64_t s2[CATERVA_MAX_DIM], e2[CATERVA_MAX_DIM];
        for (int kind = 0; kind < 4; kind++) {
            memcpy(s2, start, sizeof(s2));
            memcpy(e2, stop, sizeof(e2));
            switch (kind) {
            case 0: s2[0] = 5; e2[0] = 4; break;
            case 1: e2[2] = 9; break;
            case 2: s2[0] = -1; break;
            default: e2[1] = 2; break;
            }
            EXPECT_NEW(caterva_get_slice(f.ctx, f.arr, s2, e2, &ds, &out), CATERVA_ERR_INVALID_ARGUMENT);
        }

        /* Invalid destination partitions: a block larger than its chunk, a
         * zero chunk on a non-empty axis, a negative chunk. */
        for (int kind = 0; kind < 3; kind++) {
            dest_storage(&ds, &BACKENDS[d], dpath);
            switch (kind) {
            case 0: ds.blockshape[2] = 5; break;
            case 1: ds.chunkshape[0] = 0; ds.blockshape[0] = 0; break;
            default: ds.chunkshape[2] = -4; break;
            }
            EXPECT_NEW(caterva_get_slice(f.ctx, f.arr, start, stop, &ds, &out), CATERVA_ERR_INVALID_ARGUMENT);
            EXPECT_NEW(caterva_copy(f.ctx, f.arr, &ds, &out), CATERVA_ERR_INVALID_ARGUMENT);
        }
        /* The reserved metalayer name in the destination storage. */
        dest_storage(&ds, &BACKENDS[d], dpath);
        uint8_t content[2] = {1, 2};
        ds.metalayers[0].name = "caterva";
        ds.metalayers[0].sdata = content;
        ds.metalayers[0].size = 2;
        ds.nmetalayers = 1;
        EXPECT_NEW(caterva_get_slice(f.ctx, f.arr, start, stop, &ds, &out), CATERVA_ERR_INVALID_ARGUMENT);
#undef EXPECT_NEW
    }
    return finish(&f);
}

static int test_bad_orthogonal(const test_case_t *tc) {
    SETUP("bad_orthogonal");
    int64_t s0[3] = {9, 0, 4}, s1[1] = {0}, s2[4] = {7, 1, 1, 5};
    int64_t *sel[CATERVA_MAX_DIM] = {s0, s1, s2};
    int64_t size[CATERVA_MAX_DIM] = {3, 1, 4};
    int64_t bshape[CATERVA_MAX_DIM] = {3, 1, 4};
    int64_t bsize = 12 * tc->itemsize;
    int64_t cap = 64 * tc->itemsize;
    uint8_t *out = malloc((size_t)cap);
    uint8_t *in = malloc((size_t)cap);
    CHECK(out != NULL && in != NULL);
    memset(in, 0x44, (size_t)cap);

#define EXPECT_GET(call, rc)                                                \
    do {                                                                    \
        memset(out, SENT, (size_t)cap);                                     \
        EXPECT(call, rc);                                                   \
        for (int64_t k_ = 0; k_ < cap; k_++) {                              \
            CHECK(out[k_] == SENT);                                         \
        }                                                                   \
    } while (0)

    EXPECT_GET(caterva_get_orthogonal_selection(NULL, f.arr, sel, size, out, bshape, bsize), CATERVA_ERR_NULL_POINTER);
    EXPECT_GET(caterva_get_orthogonal_selection(f.ctx, NULL, sel, size, out, bshape, bsize), CATERVA_ERR_NULL_POINTER);
    EXPECT_GET(caterva_get_orthogonal_selection(f.ctx, f.arr, NULL, size, out, bshape, bsize), CATERVA_ERR_NULL_POINTER);
    EXPECT_GET(caterva_get_orthogonal_selection(f.ctx, f.arr, sel, NULL, out, bshape, bsize), CATERVA_ERR_NULL_POINTER);
    EXPECT(caterva_get_orthogonal_selection(f.ctx, f.arr, sel, size, NULL, bshape, bsize), CATERVA_ERR_NULL_POINTER);
    EXPECT_GET(caterva_get_orthogonal_selection(f.ctx, f.arr, sel, size, out, NULL, bsize), CATERVA_ERR_NULL_POINTER);
    EXPECT(caterva_set_orthogonal_selection(NULL, f.arr, sel, size, in, bshape, bsize), CATERVA_ERR_NULL_POINTER);
    EXPECT(caterva_set_orthogonal_selection(f.ctx, NULL, sel, size, in, bshape, bsize), CATERVA_ERR_NULL_POINTER);
    EXPECT(caterva_set_orthogonal_selection(f.ctx, f.arr, NULL, size, in, bshape, bsize), CATERVA_ERR_NULL_POINTER);
    EXPECT(caterva_set_orthogonal_selection(f.ctx, f.arr, sel, NULL, in, bshape, bsize), CATERVA_ERR_NULL_POINTER);
    EXPECT(caterva_set_orthogonal_selection(f.ctx, f.arr, sel, size, NULL, bshape, bsize), CATERVA_ERR_NULL_POINTER);
    EXPECT(caterva_set_orthogonal_selection(f.ctx, f.arr, sel, size, in, NULL, bsize), CATERVA_ERR_NULL_POINTER);
    /* A NULL index list for an axis with a non-zero selection size. */
    sel[2] = NULL;
    EXPECT_GET(caterva_get_orthogonal_selection(f.ctx, f.arr, sel, size, out, bshape, bsize), CATERVA_ERR_NULL_POINTER);
    EXPECT(caterva_set_orthogonal_selection(f.ctx, f.arr, sel, size, in, bshape, bsize), CATERVA_ERR_NULL_POINTER);
    sel[2] = s2;

    /* Indices out of range (the last of the last axis, so that a call that
     * wrote as it went would already have changed items): past the end,
     * negative; on the first axis too. */
    static const int64_t bad_last[3] = {8, -1, INT64_MAX};
    for (int k = 0; k < 3; k++) {
        s2[3] = bad_last[k];
        EXPECT_GET(caterva_get_orthogonal_selection(f.ctx, f.arr, sel, size, out, bshape, bsize),
                   CATERVA_ERR_INVALID_INDEX);
        EXPECT(caterva_set_orthogonal_selection(f.ctx, f.arr, sel, size, in, bshape, bsize), CATERVA_ERR_INVALID_INDEX);
    }
    s2[3] = 5;
    s0[1] = 10;
    EXPECT_GET(caterva_get_orthogonal_selection(f.ctx, f.arr, sel, size, out, bshape, bsize), CATERVA_ERR_INVALID_INDEX);
    EXPECT(caterva_set_orthogonal_selection(f.ctx, f.arr, sel, size, in, bshape, bsize), CATERVA_ERR_INVALID_INDEX);
    s0[1] = 0;
    s1[0] = 1;
    EXPECT_GET(caterva_get_orthogonal_selection(f.ctx, f.arr, sel, size, out, bshape, bsize), CATERVA_ERR_INVALID_INDEX);
    EXPECT(caterva_set_orthogonal_selection(f.ctx, f.arr, sel, size, in, bshape, bsize), CATERVA_ERR_INVALID_INDEX);
    s1[0] = 0;

    /* A buffer shape smaller than the selection, a buffer too small for its
     * shape, a negative size. */
    bshape[2] = 3;
    EXPECT_GET(caterva_get_orthogonal_selection(f.ctx, f.arr, sel, size, out, bshape, bsize),
               CATERVA_ERR_INVALID_ARGUMENT);
    EXPECT(caterva_set_orthogonal_selection(f.ctx, f.arr, sel, size, in, bshape, bsize), CATERVA_ERR_INVALID_ARGUMENT);
    bshape[2] = 4;
    EXPECT_GET(caterva_get_orthogonal_selection(f.ctx, f.arr, sel, size, out, bshape, bsize - 1),
               CATERVA_ERR_INVALID_ARGUMENT);
    EXPECT(caterva_set_orthogonal_selection(f.ctx, f.arr, sel, size, in, bshape, bsize - 1),
           CATERVA_ERR_INVALID_ARGUMENT);
    EXPECT_GET(caterva_get_orthogonal_selection(f.ctx, f.arr, sel, size, out, bshape, -1), CATERVA_ERR_INVALID_ARGUMENT);
    EXPECT(caterva_set_orthogonal_selection(f.ctx, f.arr, sel, size, in, bshape, -1), CATERVA_ERR_INVALID_ARGUMENT);
#undef EXPECT_GET

    /* The valid call works. */
    CHECK_OK(caterva_get_orthogonal_selection(f.ctx, f.arr, sel, size, out, bshape, bsize));
    free(out);
    free(in);
    return finish(&f);
}

void suite_reshape_bad_input(void) {
    m_run_shape("test_bad_resize", test_bad_resize, &BASE);
    m_run_shape("test_bad_insert_append", test_bad_insert_append, &BASE);
    m_run_shape("test_bad_delete", test_bad_delete, &BASE);
    m_run_shape("test_bad_squeeze", test_bad_squeeze, &BASE);
    m_run_shape("test_bad_get_slice_copy", test_bad_get_slice_copy, &BASE);
    m_run_shape("test_bad_orthogonal", test_bad_orthogonal, &BASE);
}
