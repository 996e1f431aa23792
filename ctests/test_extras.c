/* The extensions from c-blosc2 3.x's b2nd: chunk lists and chunk regions,
 * caterva_copy_buffer, caterva_expand_dims, caterva_nans,
 * caterva_concatenate / caterva_append_array, and arrays inside larger files
 * (caterva_save_append, caterva_open_offset). Each with its failures: the
 * error code, no output written, nothing changed. */
#include <math.h>
#include <stdlib.h>

#include "harness.h"

/* The chunks listed for the whole array are all of them; each chunk's region
 * touches only that chunk; bad chunk numbers and pointers are refused. */
static int test_chunk_lists(const test_case_t *tc) {
    if (h_skip_disk_itemsize(tc)) {
        return 0;
    }
    caterva_ctx_t *ctx;
    char path[256];
    caterva_params_t params;
    caterva_storage_t storage;
    CHECK_OK(h_setup(tc, "chunk_lists", &ctx, path, &params, &storage));
    caterva_array_t *arr;
    CHECK_OK(caterva_zeros(ctx, &params, &storage, &arr));
    int64_t start[CATERVA_MAX_DIM] = {0}, stop[CATERVA_MAX_DIM] = {0};
    for (int i = 0; i < arr->ndim; i++) {
        stop[i] = arr->shape[i];
    }
    int64_t *list = (int64_t *)1, n = -1;
    CHECK_OK(caterva_get_slice_nchunks(ctx, arr, start, stop, &list, &n));
    CHECK(n == (arr->nitems == 0 ? 0 : arr->nchunks));
    CHECK((n == 0) == (list == NULL));
    for (int64_t k = 0; k < n; k++) {
        CHECK(list[k] == k);
        int64_t lo[CATERVA_MAX_DIM], hi[CATERVA_MAX_DIM];
        CHECK_OK(caterva_get_chunk_region(ctx, arr, k, lo, hi));
        int64_t *one = NULL, m = 0;
        CHECK_OK(caterva_get_slice_nchunks(ctx, arr, lo, hi, &one, &m));
        CHECK(m == 1 && one[0] == k);
        free(one);
        for (int i = 0; i < arr->ndim; i++) {
            CHECK(lo[i] % arr->chunkshape[i] == 0);
            CHECK(lo[i] < hi[i] && hi[i] <= arr->shape[i]);
        }
    }
    free(list);
    int64_t lo[CATERVA_MAX_DIM] = {-7}, hi[CATERVA_MAX_DIM] = {-7};
    CHECK_RC(caterva_get_chunk_region(ctx, arr, n, lo, hi), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_get_chunk_region(ctx, arr, -1, lo, hi), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(lo[0] == -7 && hi[0] == -7);
    if (arr->ndim > 0) {
        stop[0] = arr->shape[0] + 1;
        list = (int64_t *)1;
        CHECK_RC(caterva_get_slice_nchunks(ctx, arr, start, stop, &list, &n), CATERVA_ERR_INVALID_ARGUMENT);
        CHECK(list == (int64_t *)1);
        CHECK_RC(caterva_get_slice_nchunks(ctx, arr, NULL, stop, &list, &n), CATERVA_ERR_NULL_POINTER);
        CHECK_RC(caterva_get_chunk_region(ctx, arr, 0, NULL, hi), CATERVA_ERR_NULL_POINTER);
    }
    CHECK_RC(caterva_get_slice_nchunks(ctx, arr, start, stop, NULL, &n), CATERVA_ERR_NULL_POINTER);
    CHECK_OK(caterva_free(ctx, &arr));
    if (path[0]) {
        CHECK_OK(caterva_remove(ctx, path));
    }
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* A 2 x 3 box of 2-byte items from a 4 x 5 buffer into a 3 x 6 one; a 0-dim
 * copy; refused boxes, sizes and overlaps write nothing. */
static int test_copy_buffer(const test_case_t *tc) {
    (void)tc;
    uint16_t src[4 * 5], dst[3 * 6];
    for (int i = 0; i < 20; i++) {
        src[i] = (uint16_t)(100 + i);
    }
    for (int i = 0; i < 18; i++) {
        dst[i] = 0xFFFF;
    }
    int64_t spad[2] = {4, 5}, sstart[2] = {1, 1}, sstop[2] = {3, 4}, dpad[2] = {3, 6}, dstart[2] = {0, 2};
    CHECK_OK(caterva_copy_buffer(2, 2, src, sizeof(src), spad, sstart, sstop, dst, sizeof(dst), dpad, dstart));
    for (int r = 0; r < 3; r++) {
        for (int c = 0; c < 6; c++) {
            uint16_t want = (r < 2 && c >= 2 && c < 5) ? src[(r + 1) * 5 + (c - 2 + 1)] : 0xFFFF;
            CHECK(dst[r * 6 + c] == want);
        }
    }
    uint8_t one[3] = {7, 8, 9}, got[3] = {0};
    CHECK_OK(caterva_copy_buffer(0, 3, one, 3, NULL, NULL, NULL, got, 3, NULL, NULL));
    CHECK(got[0] == 7 && got[2] == 9);
    uint16_t keep[18];
    memcpy(keep, dst, sizeof(dst));
    int64_t far[2] = {2, 4};
    CHECK_RC(caterva_copy_buffer(2, 2, src, sizeof(src), spad, sstart, sstop, dst, sizeof(dst), dpad, far),
             CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_copy_buffer(2, 2, src, sizeof(src) - 1, spad, sstart, sstop, dst, sizeof(dst), dpad, dstart),
             CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_copy_buffer(2, 2, src, sizeof(src), spad, sstop, sstart, dst, sizeof(dst), dpad, dstart),
             CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_copy_buffer(9, 2, src, sizeof(src), spad, sstart, sstop, dst, sizeof(dst), dpad, dstart),
             CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_copy_buffer(2, 0, src, sizeof(src), spad, sstart, sstop, dst, sizeof(dst), dpad, dstart),
             CATERVA_ERR_INVALID_ARGUMENT);
    /* The same buffer on both sides. */
    CHECK_RC(caterva_copy_buffer(2, 2, dst, sizeof(dst), dpad, sstart, sstop, dst, sizeof(dst), dpad, dstart),
             CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_copy_buffer(2, 2, NULL, sizeof(src), spad, sstart, sstop, dst, sizeof(dst), dpad, dstart),
             CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_copy_buffer(2, 2, src, sizeof(src), spad, NULL, sstop, dst, sizeof(dst), dpad, dstart),
             CATERVA_ERR_NULL_POINTER);
    CHECK(memcmp(keep, dst, sizeof(dst)) == 0);
    return 0;
}

/* expand_dims at the front and the back: the items stay, the fields follow,
 * the file reopens with the new shape; an axis out of range is refused. */
static int test_expand_dims(const test_case_t *tc) {
    if (h_skip_disk_itemsize(tc) || tc->shape.ndim >= 6) {
        return 0;
    }
    caterva_ctx_t *ctx;
    char path[256];
    caterva_params_t params;
    caterva_storage_t storage;
    CHECK_OK(h_setup(tc, "expand_dims", &ctx, path, &params, &storage));
    int64_t nitems = h_nitems(params.ndim, params.shape);
    int64_t nbytes = nitems * tc->itemsize;
    uint8_t *data = malloc((size_t)nbytes + 1), *back = malloc((size_t)nbytes + 1);
    CHECK(data != NULL && back != NULL);
    h_fill_buffer(data, nitems, tc->itemsize);
    caterva_array_t *arr;
    CHECK_OK(caterva_from_buffer(ctx, data, nbytes, &params, &storage, &arr));
    CHECK_RC(caterva_expand_dims(ctx, arr, -1), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_expand_dims(ctx, arr, (int8_t)(params.ndim + 1)), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(arr->ndim == params.ndim);
    CHECK_OK(caterva_expand_dims(ctx, arr, 0));
    CHECK_OK(caterva_expand_dims(ctx, arr, (int8_t)(params.ndim + 1)));
    CHECK(arr->ndim == params.ndim + 2);
    CHECK(arr->shape[0] == 1 && arr->chunkshape[0] == 1 && arr->blockshape[0] == 1);
    CHECK(arr->shape[params.ndim + 1] == 1);
    for (int i = 0; i < params.ndim; i++) {
        CHECK(arr->shape[i + 1] == params.shape[i]);
        CHECK(arr->chunkshape[i + 1] == storage.chunkshape[i]);
    }
    CHECK(arr->nitems == nitems);
    CHECK_OK(caterva_to_buffer(ctx, arr, back, nbytes));
    CHECK(memcmp(data, back, (size_t)nbytes) == 0);
    CHECK_OK(caterva_free(ctx, &arr));
    if (path[0]) {
        CHECK_OK(caterva_open(ctx, path, &arr));
        CHECK(arr->ndim == params.ndim + 2);
        CHECK_OK(caterva_to_buffer(ctx, arr, back, nbytes));
        CHECK(memcmp(data, back, (size_t)nbytes) == 0);
        CHECK_OK(caterva_free(ctx, &arr));
        CHECK_OK(caterva_remove(ctx, path));
    }
    free(data);
    free(back);
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* nans of f8 (the default), >f4 and <f2; a dtype that is no float is refused
 * and leaves no file. */
static int test_nans(const test_case_t *tc) {
    (void)tc;
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    char path[] = "ctest_nans.b2frame";
    (void)caterva_remove(ctx, path);
    caterva_params_t params = {.itemsize = 8, .ndim = 2, .shape = {7, 5}};
    caterva_storage_t storage = {.chunkshape = {3, 2}, .blockshape = {2, 1}, .contiguous = true, .urlpath = path};
    caterva_array_t *arr;
    CHECK_OK(caterva_nans(ctx, &params, &storage, NULL, &arr));
    double d[35];
    CHECK_OK(caterva_to_buffer(ctx, arr, d, sizeof(d)));
    for (int i = 0; i < 35; i++) {
        CHECK(isnan(d[i]));
    }
    char *dtype = NULL;
    CHECK_OK(caterva_get_dtype(ctx, arr, &dtype));
    CHECK(strcmp(dtype, "<f8") == 0);
    free(dtype);
    CHECK_OK(caterva_free(ctx, &arr));
    CHECK_OK(caterva_remove(ctx, path));

    params.itemsize = 4;
    storage.urlpath = NULL;
    CHECK_OK(caterva_nans(ctx, &params, &storage, ">f4", &arr));
    uint8_t f[35 * 4];
    CHECK_OK(caterva_to_buffer(ctx, arr, f, sizeof(f)));
    for (int i = 0; i < 35; i++) {
        CHECK(f[4 * i] == 0x7f && f[4 * i + 1] == 0xc0 && f[4 * i + 2] == 0 && f[4 * i + 3] == 0);
    }
    CHECK_OK(caterva_free(ctx, &arr));
    params.itemsize = 2;
    CHECK_OK(caterva_nans(ctx, &params, &storage, "<f2", &arr));
    uint16_t h[35];
    CHECK_OK(caterva_to_buffer(ctx, arr, h, sizeof(h)));
    CHECK(h[0] == 0x7e00 && h[34] == 0x7e00);
    CHECK_OK(caterva_free(ctx, &arr));

    storage.urlpath = path;
    arr = NULL;
    CHECK_RC(caterva_nans(ctx, &params, &storage, "<i2", &arr), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_nans(ctx, &params, &storage, "<f4", &arr), CATERVA_ERR_INVALID_ARGUMENT);
    params.itemsize = 3;
    CHECK_RC(caterva_nans(ctx, &params, &storage, NULL, &arr), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(arr == NULL);
    CHECK(!h_exists(path));
    CHECK_RC(caterva_nans(ctx, &params, &storage, NULL, NULL), CATERVA_ERR_NULL_POINTER);
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* A 5 x 4 and a 3 x 4 array of u4 concatenated along axis 0 (unaligned
 * chunks), to a file; in place; with itself; shapes that do not fit. */
static int test_concatenate(const test_case_t *tc) {
    (void)tc;
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    char path[] = "ctest_concat.b2frame";
    (void)caterva_remove(ctx, path);
    caterva_params_t pa = {.itemsize = 4, .ndim = 2, .shape = {5, 4}};
    caterva_params_t pb = {.itemsize = 4, .ndim = 2, .shape = {3, 4}};
    caterva_storage_t mem = {.chunkshape = {2, 3}, .blockshape = {1, 2}};
    uint32_t a[20], b[12], got[40];
    for (uint32_t i = 0; i < 20; i++) {
        a[i] = i;
    }
    for (uint32_t i = 0; i < 12; i++) {
        b[i] = 1000 + i;
    }
    caterva_array_t *x, *y, *z;
    CHECK_OK(caterva_from_buffer(ctx, a, sizeof(a), &pa, &mem, &x));
    CHECK_OK(caterva_from_buffer(ctx, b, sizeof(b), &pb, &mem, &y));
    caterva_storage_t file = {.chunkshape = {3, 4}, .blockshape = {2, 2}, .contiguous = true, .urlpath = path};
    CHECK_OK(caterva_concatenate(ctx, x, y, 0, &file, &z));
    CHECK(z->ndim == 2 && z->shape[0] == 8 && z->shape[1] == 4);
    CHECK_OK(caterva_to_buffer(ctx, z, got, 32 * 4));
    CHECK(memcmp(got, a, sizeof(a)) == 0 && memcmp(got + 20, b, sizeof(b)) == 0);
    CHECK_OK(caterva_free(ctx, &z));
    /* Onto a source's own path: refused, the file stays. */
    caterva_array_t *w;
    CHECK_OK(caterva_open(ctx, path, &w));
    z = NULL;
    CHECK_RC(caterva_concatenate(ctx, w, y, 0, &file, &z), CATERVA_ERR_INVALID_STORAGE);
    CHECK(z == NULL);
    /* In place, into the file: the items of y follow, and persist. */
    CHECK_OK(caterva_append_array(ctx, w, y, 0));
    CHECK(w->shape[0] == 11);
    CHECK_OK(caterva_free(ctx, &w));
    CHECK_OK(caterva_open(ctx, path, &w));
    CHECK(w->shape[0] == 11);
    CHECK_OK(caterva_free(ctx, &w));
    /* With itself, along axis 1. */
    CHECK_OK(caterva_append_array(ctx, x, x, 1));
    CHECK(x->shape[0] == 5 && x->shape[1] == 8);
    CHECK_OK(caterva_to_buffer(ctx, x, got, 40 * 4));
    for (int r = 0; r < 5; r++) {
        for (int c = 0; c < 8; c++) {
            CHECK(got[r * 8 + c] == a[r * 4 + c % 4]);
        }
    }
    /* x is now 5 x 8: off-axis shapes differ from y's; axis 2 does not exist. */
    CHECK_RC(caterva_append_array(ctx, x, y, 0), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_append_array(ctx, y, y, 2), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_concatenate(ctx, x, y, 0, &mem, &z), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_append_array(ctx, x, NULL, 0), CATERVA_ERR_NULL_POINTER);
    CHECK(x->shape[1] == 8 && y->shape[0] == 3);
    CHECK_OK(caterva_free(ctx, &x));
    CHECK_OK(caterva_free(ctx, &y));
    CHECK_OK(caterva_remove(ctx, path));
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* Two arrays saved into one file after some other bytes; each opens at its
 * offset, read-only; offsets where no frame starts are refused. */
static int test_offsets(const test_case_t *tc) {
    (void)tc;
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    const char *path = "ctest_pack.bin";
    FILE *fp = fopen(path, "wb");
    CHECK(fp != NULL);
    CHECK(fwrite("not a frame\n", 1, 12, fp) == 12);
    CHECK(fclose(fp) == 0);
    caterva_params_t params = {.itemsize = 8, .ndim = 1, .shape = {30}};
    caterva_storage_t storage = {.chunkshape = {7}, .blockshape = {3}};
    int64_t v[30], w[30];
    for (int i = 0; i < 30; i++) {
        v[i] = 3 * i - 40;
    }
    caterva_array_t *a, *b;
    CHECK_OK(caterva_from_buffer(ctx, v, sizeof(v), &params, &storage, &a));
    CHECK_OK(caterva_zeros(ctx, &params, &storage, &b));
    int64_t oa = -1, ob = -1;
    CHECK_OK(caterva_save_append(ctx, a, path, &oa));
    CHECK_OK(caterva_save_append(ctx, b, path, &ob));
    CHECK(oa == 12 && ob > oa);
    CHECK_RC(caterva_save_append(ctx, a, ".", &oa), CATERVA_ERR_INVALID_STORAGE);
    CHECK_RC(caterva_save_append(ctx, a, path, NULL), CATERVA_ERR_NULL_POINTER);
    CHECK(oa == 12);
    CHECK_OK(caterva_free(ctx, &a));
    CHECK_OK(caterva_free(ctx, &b));

    CHECK_OK(caterva_open_offset(ctx, path, oa, &a));
    CHECK_OK(caterva_to_buffer(ctx, a, w, sizeof(w)));
    CHECK(memcmp(v, w, sizeof(v)) == 0);
    int64_t start = 0, stop = 1, shape1 = 1;
    CHECK_RC(caterva_set_slice_buffer(ctx, w, &shape1, 8, &start, &stop, a), CATERVA_ERR_INVALID_STORAGE);
    CHECK_RC(caterva_expand_dims(ctx, a, 0), CATERVA_ERR_INVALID_STORAGE);
    CHECK(a->ndim == 1);
    CHECK_OK(caterva_free(ctx, &a));
    CHECK_OK(caterva_open_offset(ctx, path, ob, &b));
    CHECK_OK(caterva_to_buffer(ctx, b, w, sizeof(w)));
    CHECK(w[0] == 0 && w[29] == 0);
    CHECK_OK(caterva_free(ctx, &b));

    a = NULL;
    CHECK_RC(caterva_open_offset(ctx, path, 0, &a), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_open_offset(ctx, path, oa + 1, &a), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_open_offset(ctx, path, -5, &a), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_open_offset(ctx, "ctest_no_such_file", 0, &a), CATERVA_ERR_INVALID_STORAGE);
    CHECK_RC(caterva_open_offset(ctx, NULL, 0, &a), CATERVA_ERR_NULL_POINTER);
    CHECK(a == NULL);
    CHECK(remove(path) == 0);
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

void suite_extras(void) {
    RUN_ALL_CASES(test_chunk_lists);
    RUN_ALL_CASES(test_expand_dims);
    RUN_CASE(test_copy_buffer);
    RUN_CASE(test_nans);
    RUN_CASE(test_concatenate);
    RUN_CASE(test_offsets);
}
