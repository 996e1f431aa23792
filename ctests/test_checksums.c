/* Per-chunk checksums (extension): caterva_ctx_set_checksums,
 * caterva_enable_checksums, caterva_has_checksums, caterva_ctx_require_checksums.
 * Arrays keep their table through writes, reshapes, copies and reopening; a
 * damaged chunk file is reported as an error, never returned as data; a
 * context that requires checksums refuses arrays without them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static int expect_checksums(caterva_ctx_t *ctx, caterva_array_t *arr, bool want) {
    bool got = !want;
    CHECK_OK(caterva_has_checksums(ctx, arr, &got));
    CHECK(got == want);
    return 0;
}

/* Every item of arr equals h_value(i) for the first n items. */
static int expect_items(caterva_ctx_t *ctx, caterva_array_t *arr, int64_t n) {
    int64_t size = arr->nitems * arr->itemsize;
    uint8_t *buf = malloc(size > 0 ? (size_t)size : 1);
    CHECK(buf != NULL);
    CHECK_OK(caterva_to_buffer(ctx, arr, buf, size));
    for (int64_t i = 0; i < n; i++) {
        CHECK(h_get(buf, i, arr->itemsize) == h_value(i, arr->itemsize));
    }
    free(buf);
    return 0;
}

static int test_checksums(const test_case_t *tc) {
    if (h_skip_disk_itemsize(tc)) {
        return 0;
    }
    caterva_ctx_t *ctx = NULL;
    char path[256];
    caterva_params_t params;
    caterva_storage_t storage;
    CHECK_OK(h_setup(tc, "checksums", &ctx, path, &params, &storage));
    int64_t n = h_nitems(params.ndim, params.shape);
    int64_t size = n * params.itemsize;
    uint8_t *buf = malloc(size > 0 ? (size_t)size : 1);
    CHECK(buf != NULL);
    h_fill_buffer(buf, n, params.itemsize);

    /* Off by default; on for arrays made after the call. */
    caterva_array_t *plain = NULL;
    caterva_storage_t mem = storage;
    mem.urlpath = NULL;
    CHECK_OK(caterva_from_buffer(ctx, buf, size, &params, &mem, &plain));
    if (expect_checksums(ctx, plain, false)) {
        return 1;
    }
    CHECK_RC(caterva_ctx_set_checksums(NULL, true), CATERVA_ERR_NULL_POINTER);
    CHECK_OK(caterva_ctx_set_checksums(ctx, true));
    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_from_buffer(ctx, buf, size, &params, &storage, &arr));
    if (expect_checksums(ctx, arr, true) || expect_items(ctx, arr, n)) {
        return 1;
    }
    CHECK_RC(caterva_has_checksums(ctx, arr, NULL), CATERVA_ERR_NULL_POINTER);

    /* Added to an existing array. */
    CHECK_OK(caterva_enable_checksums(ctx, plain));
    if (expect_checksums(ctx, plain, true) || expect_items(ctx, plain, n)) {
        return 1;
    }
    CHECK_OK(caterva_free(ctx, &plain));

    /* Kept through a write, a grow and a reopen. */
    if (tc->shape.ndim > 0 && n > 0) {
        int64_t start[CATERVA_MAX_DIM] = {0}, stop[CATERVA_MAX_DIM], bshape[CATERVA_MAX_DIM];
        for (int i = 0; i < params.ndim; i++) {
            stop[i] = params.shape[i];
            bshape[i] = params.shape[i];
        }
        CHECK_OK(caterva_set_slice_buffer(ctx, buf, bshape, size, start, stop, arr));
        int64_t grown[CATERVA_MAX_DIM];
        memcpy(grown, arr->shape, sizeof(grown));
        grown[0] += 2;
        CHECK_OK(caterva_resize(ctx, arr, grown, NULL));
    }
    if (tc->backend.persistent) {
        CHECK_OK(caterva_free(ctx, &arr));
        CHECK_OK(caterva_ctx_set_checksums(ctx, false));
        CHECK_OK(caterva_open(ctx, path, &arr));
    }
    /* Growing axis 0 at its end keeps the first n items where they were. */
    if (expect_checksums(ctx, arr, true) || expect_items(ctx, arr, n)) {
        return 1;
    }

    /* A sparse frame's chunk file with a flipped byte: an error, not data. */
    if (tc->backend.persistent && !tc->backend.contiguous && arr->sc->nchunks > 0 && n > 0) {
        CHECK_OK(caterva_free(ctx, &arr));
        char chunk[300];
        snprintf(chunk, sizeof(chunk), "%s/00000000.chunk", path);
        FILE *f = fopen(chunk, "r+b");
        CHECK(f != NULL);
        CHECK(fseek(f, -1, SEEK_END) == 0);
        int c = fgetc(f);
        CHECK(c != EOF);
        CHECK(fseek(f, -1, SEEK_END) == 0);
        CHECK(fputc(c ^ 0x40, f) != EOF);
        CHECK(fclose(f) == 0);
        CHECK_OK(caterva_open(ctx, path, &arr));
        int64_t asize = arr->nitems * arr->itemsize;
        uint8_t *out = malloc((size_t)asize);
        CHECK(out != NULL);
        CHECK_RC(caterva_to_buffer(ctx, arr, out, asize), CATERVA_ERR_BLOSC_FAILED);
        free(out);
    }
    CHECK_OK(caterva_free(ctx, &arr));
    if (tc->backend.persistent) {
        CHECK_OK(caterva_remove(ctx, path));
    }
    free(buf);
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* caterva_ctx_require_checksums: a file and a frame without a checksum
 * table are refused (CATERVA_ERR_BLOSC_FAILED, with a reason), the same
 * array with checksums added opens, and arrays made with the requiring
 * context keep checksums. */
static int test_require_checksums(const test_case_t *tc) {
    (void)tc;
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL, *strict = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    CHECK_OK(caterva_ctx_new(&cfg, &strict));
    CHECK_RC(caterva_ctx_require_checksums(NULL, true), CATERVA_ERR_NULL_POINTER);
    CHECK_OK(caterva_ctx_require_checksums(strict, true));
    CHECK_OK(caterva_ctx_require_checksums(strict, true)); /* twice: no change */

    for (int contiguous = 0; contiguous <= 1; contiguous++) {
        char path[64];
        snprintf(path, sizeof(path), "ctest_require_%d.%s", contiguous, contiguous ? "b2frame" : "b2nd");
        caterva_remove(ctx, path);
        caterva_params_t params;
        caterva_storage_t storage;
        h_small_params(&params, &storage, path, contiguous != 0);
        int64_t n = h_nitems(params.ndim, params.shape);
        int64_t size = n * params.itemsize;
        uint8_t *buf = malloc((size_t)size);
        CHECK(buf != NULL);
        h_fill_buffer(buf, n, params.itemsize);

        /* Without checksums: refused by the requiring context, file and frame. */
        caterva_array_t *arr = NULL;
        CHECK_OK(caterva_from_buffer(ctx, buf, size, &params, &storage, &arr));
        uint8_t *frame = NULL;
        int64_t frame_len = 0;
        bool needs_free = false;
        CHECK_OK(caterva_to_cframe(ctx, arr, &frame, &frame_len, &needs_free));
        caterva_array_t *refused = NULL;
        CHECK_RC(caterva_from_cframe(strict, frame, frame_len, true, &refused), CATERVA_ERR_BLOSC_FAILED);
        CHECK(refused == NULL);
        CHECK(strstr(caterva_last_error(), "requires checksums") != NULL);
        if (needs_free) {
            free(frame);
        }
        CHECK_OK(caterva_free(ctx, &arr));
        CHECK_RC(caterva_open(strict, path, &refused), CATERVA_ERR_BLOSC_FAILED);
        CHECK(refused == NULL);
        CHECK(strstr(caterva_last_error(), "caterva_open: corrupt data: the array keeps no checksum table") != NULL);

        /* With checksums added, it opens; and stops being refused when not required. */
        CHECK_OK(caterva_open(ctx, path, &arr));
        CHECK_OK(caterva_enable_checksums(ctx, arr));
        CHECK_OK(caterva_free(ctx, &arr));
        CHECK_OK(caterva_open(strict, path, &arr));
        uint8_t *out = malloc((size_t)size);
        CHECK(out != NULL);
        CHECK_OK(caterva_to_buffer(strict, arr, out, size));
        CHECK(memcmp(out, buf, (size_t)size) == 0);
        free(out);
        CHECK_OK(caterva_free(strict, &arr));

        /* Made with the requiring context: checksums kept, and opened by it. */
        CHECK_OK(caterva_remove(ctx, path));
        CHECK_OK(caterva_from_buffer(strict, buf, size, &params, &storage, &arr));
        bool kept = false;
        CHECK_OK(caterva_has_checksums(strict, arr, &kept));
        CHECK(kept);
        CHECK_OK(caterva_free(strict, &arr));
        CHECK_OK(caterva_open(strict, path, &arr));
        CHECK_OK(caterva_free(strict, &arr));
        CHECK_OK(caterva_remove(ctx, path));
        free(buf);
    }
    /* No longer required: arrays without checksums open again. */
    CHECK_OK(caterva_ctx_require_checksums(strict, false));
    caterva_params_t params;
    caterva_storage_t storage;
    h_small_params(&params, &storage, NULL, true);
    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_zeros(ctx, &params, &storage, &arr));
    uint8_t *frame = NULL;
    int64_t frame_len = 0;
    bool needs_free = false;
    CHECK_OK(caterva_to_cframe(ctx, arr, &frame, &frame_len, &needs_free));
    caterva_array_t *back = NULL;
    CHECK_OK(caterva_from_cframe(strict, frame, frame_len, true, &back));
    CHECK_OK(caterva_free(strict, &back));
    if (needs_free) {
        free(frame);
    }
    CHECK_OK(caterva_free(ctx, &arr));
    CHECK_OK(caterva_ctx_free(&strict));
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

void suite_checksums(void) {
    RUN_ALL_CASES(test_checksums);
    RUN_CASE(test_require_checksums);
}
