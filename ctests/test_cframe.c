/* caterva_to_cframe / caterva_from_cframe: an array through a contiguous
 * frame buffer, copied or read in place. */
#include <stdlib.h>

#include "harness.h"

static int check_copy(caterva_ctx_t *ctx, const test_case_t *tc, caterva_array_t *arr, const uint8_t *src,
                      int64_t nbytes, const uint8_t *vl, int32_t vlsize) {
    CHECK(arr != NULL);
    CHECK(arr->ndim == tc->shape.ndim && arr->itemsize == tc->itemsize);
    CHECK(arr->nitems == h_nitems(tc->shape.ndim, tc->shape.shape));
    for (int i = 0; i < tc->shape.ndim; i++) {
        CHECK(arr->shape[i] == tc->shape.shape[i]);
        CHECK(arr->chunkshape[i] == tc->shape.chunkshape[i]);
        CHECK(arr->blockshape[i] == tc->shape.blockshape[i]);
    }
    uint8_t *dst = malloc((size_t)nbytes + 1);
    CHECK(dst != NULL);
    memset(dst, 0x3C, (size_t)nbytes + 1);
    CHECK_OK(caterva_to_buffer(ctx, arr, dst, nbytes));
    CHECK(memcmp(src, dst, (size_t)nbytes) == 0);
    free(dst);
    /* Metalayers travel in the frame. */
    caterva_metalayer_t m = {NULL, NULL, 0};
    CHECK_OK(caterva_vlmeta_get(ctx, arr, "vl", &m));
    CHECK(m.size == vlsize && memcmp(m.sdata, vl, (size_t)vlsize) == 0);
    free(m.name);
    free(m.sdata);
    CHECK_OK(caterva_meta_get(ctx, arr, "user", &m));
    CHECK(m.size == 3 && m.sdata[0] == 'a' && m.sdata[1] == 'b' && m.sdata[2] == 'c');
    free(m.name);
    free(m.sdata);
    return 0;
}

static int test_cframe(const test_case_t *tc) {
    if (h_skip_disk_itemsize(tc)) {
        return 0;
    }
    caterva_ctx_t *ctx = NULL;
    char path[256];
    caterva_params_t params;
    caterva_storage_t storage;
    CHECK_OK(h_setup(tc, "cframe", &ctx, path, &params, &storage));
    uint8_t user[] = {'a', 'b', 'c'};
    storage.metalayers[0].name = "user";
    storage.metalayers[0].sdata = user;
    storage.metalayers[0].size = 3;
    storage.nmetalayers = 1;

    int64_t nitems = h_nitems(tc->shape.ndim, tc->shape.shape);
    int64_t nbytes = nitems * tc->itemsize;
    uint8_t *src = malloc((size_t)nbytes + 1);
    CHECK(src != NULL);
    h_fill_buffer(src, nitems, tc->itemsize);
    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_from_buffer(ctx, src, nbytes, &params, &storage, &arr));
    uint8_t vl[] = {5, 4, 3, 2, 1};
    caterva_metalayer_t vlm = {"vl", vl, 5};
    CHECK_OK(caterva_vlmeta_add(ctx, arr, &vlm));

    uint8_t *cframe = NULL;
    int64_t cframe_len = -1;
    bool needs_free = false;
    CHECK_OK(caterva_to_cframe(ctx, arr, &cframe, &cframe_len, &needs_free));
    CHECK(cframe != NULL);
    CHECK(cframe_len > 0);
    /* Keep a private copy to check that from_cframe does not modify it. */
    uint8_t *saved = malloc((size_t)cframe_len);
    CHECK(saved != NULL);
    memcpy(saved, cframe, (size_t)cframe_len);

    /* copy = true: the new array owns its data. */
    caterva_array_t *a1 = NULL;
    CHECK_OK(caterva_from_cframe(ctx, cframe, cframe_len, true, &a1));
    if (check_copy(ctx, tc, a1, src, nbytes, vl, 5)) {
        return 1;
    }
    /* copy = false: reads the buffer in place. */
    caterva_array_t *a2 = NULL;
    CHECK_OK(caterva_from_cframe(ctx, cframe, cframe_len, false, &a2));
    CHECK(a2 != a1);
    if (check_copy(ctx, tc, a2, src, nbytes, vl, 5)) {
        return 1;
    }
    CHECK_OK(caterva_free(ctx, &a2));
    CHECK(memcmp(saved, cframe, (size_t)cframe_len) == 0);

    /* The copied array survives the cframe and its source. */
    if (needs_free) {
        free(cframe);
    }
    cframe = NULL;
    CHECK_OK(caterva_free(ctx, &arr));
    if (storage.urlpath != NULL) {
        CHECK_OK(caterva_remove(ctx, path));
    }
    if (check_copy(ctx, tc, a1, src, nbytes, vl, 5)) {
        return 1;
    }

    free(saved);

    CHECK_OK(caterva_free(ctx, &a1));
    free(src);
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* Writes to an array read in place from a caller's frame (copy = false)
 * never write into, reallocate or free the caller's buffer: the array is
 * copied first. (The library used to let c-blosc2 realloc the buffer, and
 * the caller's own free() then aborted with a double free.) */
static int test_nocopy_writes(const test_case_t *tc) {
    (void)tc;
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    uint8_t data[10 * 8 * 4];
    caterva_array_t *arr = NULL;
    uint8_t *frame = NULL;
    int64_t len = 0;
    bool needs_free = false;
    if (h_small_frame(ctx, data, &arr, &frame, &len, &needs_free)) {
        return 1;
    }
    /* The caller's buffer, and a copy to compare it with. */
    uint8_t *buf = malloc((size_t)len);
    uint8_t *saved = malloc((size_t)len);
    CHECK(buf != NULL && saved != NULL);
    memcpy(buf, frame, (size_t)len);
    memcpy(saved, frame, (size_t)len);
    if (needs_free) {
        free(frame);
    }
    caterva_array_t *b = NULL;
    CHECK_OK(caterva_from_cframe(ctx, buf, len, false, &b));
    int32_t ones[4] = {1, 1, 1, 1};
    int64_t start[2] = {0, 0}, stop[2] = {2, 2}, shape[2] = {2, 2};
    CHECK_OK(caterva_set_slice_buffer(ctx, ones, shape, (int64_t)sizeof(ones), start, stop, b));
    uint8_t row[8 * 4];
    h_fill_buffer(row, 8, 4);
    CHECK_OK(caterva_append(ctx, b, row, (int64_t)sizeof(row), 0));
    CHECK(memcmp(buf, saved, (size_t)len) == 0);
    int32_t got[11 * 8];
    CHECK_OK(caterva_to_buffer(ctx, b, got, (int64_t)sizeof(got)));
    CHECK(got[0] == 1 && got[1] == 1 && got[8] == 1 && got[9] == 1);
    CHECK(memcmp(&got[2], &data[2 * 4], 6 * 4) == 0);
    CHECK(memcmp(&got[80], row, sizeof(row)) == 0);
    CHECK_OK(caterva_free(ctx, &b));
    /* The caller still owns its buffer, unchanged. */
    CHECK(memcmp(buf, saved, (size_t)len) == 0);
    free(buf);
    free(saved);
    CHECK_OK(caterva_free(ctx, &arr));
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* caterva_from_schunk: wrap a super-chunk made by blosc2 from a cframe; the
 * array takes ownership (caterva_free frees it). */
static int test_from_schunk(const test_case_t *tc) {
    if (tc->backend.persistent || !tc->backend.contiguous) {
        return 0; /* the frame does not depend on the storage: one backend is enough */
    }
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    caterva_params_t params;
    caterva_storage_t storage;
    h_fill(tc, &params, &storage, NULL);
    uint8_t user[] = {'a', 'b', 'c'};
    storage.metalayers[0].name = "user";
    storage.metalayers[0].sdata = user;
    storage.metalayers[0].size = 3;
    storage.nmetalayers = 1;
    int64_t nitems = h_nitems(tc->shape.ndim, tc->shape.shape);
    int64_t nbytes = nitems * tc->itemsize;
    uint8_t *src = malloc((size_t)nbytes + 1);
    CHECK(src != NULL);
    h_fill_buffer(src, nitems, tc->itemsize);
    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_from_buffer(ctx, src, nbytes, &params, &storage, &arr));
    uint8_t vl[] = {1, 1, 2, 3, 5, 8};
    caterva_metalayer_t vlm = {"vl", vl, 6};
    CHECK_OK(caterva_vlmeta_add(ctx, arr, &vlm));
    uint8_t *cframe = NULL;
    int64_t len = 0;
    bool needs_free = false;
    CHECK_OK(caterva_to_cframe(ctx, arr, &cframe, &len, &needs_free));
    blosc2_schunk *sc = blosc2_schunk_from_buffer(cframe, len, true);
    CHECK(sc != NULL);
    if (needs_free) {
        free(cframe);
    }
    CHECK_OK(caterva_free(ctx, &arr));

    caterva_array_t *wrapped = NULL;
    CHECK_OK(caterva_from_schunk(ctx, sc, &wrapped));
    CHECK(wrapped != NULL);
    CHECK(wrapped->sc == sc);
    if (check_copy(ctx, tc, wrapped, src, nbytes, vl, 6)) {
        return 1;
    }
    CHECK(wrapped->nchunks == sc->nchunks);
    CHECK_OK(caterva_free(ctx, &wrapped));
    free(src);
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

void suite_cframe(void) {
    RUN_ALL_CASES(test_cframe);
    RUN_ALL_CASES(test_from_schunk);
    RUN_CASE(test_nocopy_writes);
}
