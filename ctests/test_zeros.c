/* caterva_zeros, caterva_empty and caterva_uninit: the public fields of the
 * new array and, for zeros and empty, contents that read back as zeros. */
#include <stdlib.h>

#include "harness.h"

typedef int (*constructor_t)(caterva_ctx_t *, caterva_params_t *, caterva_storage_t *, caterva_array_t **);

static int64_t round_up(int64_t x, int64_t m) {
    return m == 0 ? x : (x + m - 1) / m * m;
}

/* Check every public field of arr against the case it was made from. */
static int check_fields(const test_case_t *tc, const caterva_array_t *arr) {
    const shape_case_t *s = &tc->shape;
    CHECK(arr->ndim == s->ndim);
    CHECK(arr->itemsize == tc->itemsize);
    CHECK(arr->sc != NULL);
    CHECK(arr->cfg != NULL);
    int64_t nitems = 1, extnitems = 1, nchunks = 1, chunknitems = 1, blocknitems = 1, extchunknitems = 1;
    for (int i = 0; i < s->ndim; i++) {
        CHECK(arr->shape[i] == s->shape[i]);
        CHECK(arr->chunkshape[i] == s->chunkshape[i]);
        CHECK(arr->blockshape[i] == s->blockshape[i]);
        int64_t ext = round_up(s->shape[i], s->chunkshape[i]);
        CHECK(arr->extshape[i] == ext);
        CHECK(arr->extshape[i] % (arr->chunkshape[i] ? arr->chunkshape[i] : 1) == 0);
        CHECK(arr->extshape[i] >= arr->shape[i]);
        CHECK(arr->extchunkshape[i] == round_up(s->chunkshape[i], s->blockshape[i]));
        nitems *= s->shape[i];
        extnitems *= ext;
        nchunks *= s->chunkshape[i] ? ext / s->chunkshape[i] : 0;
        chunknitems *= s->chunkshape[i];
        blocknitems *= s->blockshape[i];
        extchunknitems *= round_up(s->chunkshape[i], s->blockshape[i]);
    }
    for (int i = s->ndim; i < CATERVA_MAX_DIM; i++) {
        CHECK(arr->shape[i] == 1);
        CHECK(arr->chunkshape[i] == 1);
        CHECK(arr->blockshape[i] == 1);
        CHECK(arr->extshape[i] == 1);
        CHECK(arr->extchunkshape[i] == 1);
    }
    CHECK(arr->nitems == nitems);
    CHECK(arr->nitems == h_nitems(s->ndim, s->shape));
    CHECK(arr->extnitems == extnitems);
    CHECK(arr->nchunks == nchunks);
    CHECK(arr->chunknitems == chunknitems);
    CHECK(arr->blocknitems == blocknitems);
    CHECK(arr->extchunknitems == extchunknitems);
    /* C-order strides of the array, in items. */
    for (int i = 0; i < s->ndim; i++) {
        int64_t stride = 1;
        for (int j = i + 1; j < s->ndim; j++) {
            stride *= s->shape[j];
        }
        CHECK(arr->item_array_strides[i] == stride);
    }
    /* The super-chunk holds one chunk per chunk of the grid. */
    CHECK(arr->sc->nchunks == nchunks);
    return 0;
}

/* Create with make, check the fields, and (when must_be_zero) that every item reads 0. */
static int check_constructor(const test_case_t *tc, constructor_t make, const char *tag, bool must_be_zero) {
    caterva_ctx_t *ctx = NULL;
    char path[256];
    caterva_params_t params;
    caterva_storage_t storage;
    CHECK_OK(h_setup(tc, tag, &ctx, path, &params, &storage));

    caterva_array_t *arr = NULL;
    CHECK_OK(make(ctx, &params, &storage, &arr));
    CHECK(arr != NULL);
    if (storage.urlpath != NULL) {
        CHECK(h_exists(path));
        CHECK(h_is_dir(path) == !tc->backend.contiguous);
    }
    if (check_fields(tc, arr)) {
        return 1;
    }

    int64_t nitems = h_nitems(tc->shape.ndim, tc->shape.shape);
    int64_t nbytes = nitems * tc->itemsize;
    uint8_t *buf = malloc((size_t)nbytes + 1);
    CHECK(buf != NULL);
    memset(buf, 0xA5, (size_t)nbytes + 1);
    CHECK_OK(caterva_to_buffer(ctx, arr, buf, nbytes));
    if (must_be_zero) {
        for (int64_t i = 0; i < nbytes; i++) {
            CHECK(buf[i] == 0);
        }
    }
    /* Nothing written past the end. */
    CHECK(buf[nbytes] == 0xA5);
    free(buf);

    CHECK_OK(caterva_free(ctx, &arr));
    CHECK(arr == NULL);
    if (storage.urlpath != NULL) {
        /* Freeing keeps the data on disk. */
        CHECK(h_exists(path));
        CHECK_OK(caterva_remove(ctx, path));
        CHECK(!h_exists(path));
    }
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

static int test_zeros(const test_case_t *tc) {
    return check_constructor(tc, caterva_zeros, "zeros", true);
}

static int test_empty(const test_case_t *tc) {
    return check_constructor(tc, caterva_empty, "empty", true);
}

static int test_uninit(const test_case_t *tc) {
    return check_constructor(tc, caterva_uninit, "uninit", false);
}

/* An uninitialised array can be written and read back. */
static int test_uninit_then_write(const test_case_t *tc) {
    if (tc->backend.persistent) {
        return 0; /* the disk is covered by test_uninit and the set_slice_buffer suite */
    }
    caterva_ctx_t *ctx = NULL;
    char path[256];
    caterva_params_t params;
    caterva_storage_t storage;
    CHECK_OK(h_setup(tc, "uninit_write", &ctx, path, &params, &storage));
    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_uninit(ctx, &params, &storage, &arr));

    int64_t nitems = h_nitems(tc->shape.ndim, tc->shape.shape);
    int64_t nbytes = nitems * tc->itemsize;
    uint8_t *src = malloc((size_t)nbytes + 1);
    uint8_t *dst = malloc((size_t)nbytes + 1);
    CHECK(src != NULL && dst != NULL);
    h_fill_buffer(src, nitems, tc->itemsize);
    int64_t start[CATERVA_MAX_DIM] = {0};
    int64_t stop[CATERVA_MAX_DIM] = {0};
    for (int i = 0; i < tc->shape.ndim; i++) {
        stop[i] = tc->shape.shape[i];
    }
    CHECK_OK(caterva_set_slice_buffer(ctx, src, stop, nbytes, start, stop, arr));
    CHECK_OK(caterva_to_buffer(ctx, arr, dst, nbytes));
    CHECK(memcmp(src, dst, (size_t)nbytes) == 0);
    free(src);
    free(dst);
    CHECK_OK(caterva_free(ctx, &arr));
    if (storage.urlpath != NULL) {
        CHECK_OK(caterva_remove(ctx, path));
    }
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

void suite_zeros(void) {
    RUN_ALL_CASES(test_zeros);
    RUN_ALL_CASES(test_empty);
    RUN_ALL_CASES(test_uninit);
    RUN_ALL_CASES(test_uninit_then_write);
}
