/* Handles that another handle changed (extension): two handles of one
 * array on disk (a frame file and a directory, with and without
 * checksums); 40 appends and item writes through the second. Reads through
 * the first then fail with CATERVA_ERR_CHANGED, "refresh" in the message,
 * never CATERVA_ERR_BLOSC_FAILED; its writes go into the array as it is
 * now (its shape follows); caterva_refresh brings a stale handle up to
 * date, and every handle then reads the same items. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define COLS 4

static void row(int32_t *out, int32_t v) {
    for (int c = 0; c < COLS; c++) {
        out[c] = v;
    }
}

/* All items of arr into a new buffer (the caller frees it), or NULL with rc. */
static int32_t *read_all(caterva_ctx_t *ctx, caterva_array_t *arr, int *rc) {
    int64_t size = arr->nitems * arr->itemsize;
    int32_t *out = malloc(size > 0 ? (size_t)size : 1);
    *rc = caterva_to_buffer(ctx, arr, out, size);
    if (*rc != CATERVA_SUCCEED) {
        free(out);
        return NULL;
    }
    return out;
}

static int stale_case(bool contiguous, bool checksums) {
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    CHECK_OK(caterva_ctx_set_checksums(ctx, checksums));
    char path[64];
    snprintf(path, sizeof(path), "ctest_stale_%d%d.%s", contiguous, checksums, contiguous ? "b2frame" : "b2nd");
    caterva_params_t params = {.itemsize = 4, .ndim = 2, .shape = {8, COLS}};
    caterva_storage_t storage = {.chunkshape = {4, COLS}, .blockshape = {2, 2}, .contiguous = contiguous, .urlpath = path};
    caterva_array_t *h1 = NULL, *h2 = NULL;
    CHECK_OK(caterva_zeros(ctx, &params, &storage, &h1));
    CHECK_OK(caterva_free(ctx, &h1));
    CHECK_OK(caterva_open(ctx, path, &h1));
    CHECK_OK(caterva_open(ctx, path, &h2));

    int32_t r[COLS];
    int64_t bshape[2] = {1, COLS};
    for (int i = 0; i < 40; i++) {
        row(r, 1000 + i);
        CHECK_OK(caterva_append(ctx, h2, r, sizeof(r), 0));
        int64_t start[2] = {i % 8, 0}, stop[2] = {i % 8 + 1, COLS};
        row(r, 2000 + i);
        CHECK_OK(caterva_set_slice_buffer(ctx, r, bshape, sizeof(r), start, stop, h2));
    }
    CHECK(h2->shape[0] == 48);

    /* h1's reads: the refresh error, nothing read. */
    int rc = 0;
    CHECK(h1->shape[0] == 8);
    int32_t *out = read_all(ctx, h1, &rc);
    CHECK(out == NULL && rc == CATERVA_ERR_CHANGED);
    CHECK(strstr(caterva_last_error(), "refresh") != NULL);
    CHECK(strcmp(print_error(CATERVA_ERR_CHANGED), "Changed by another handle; refresh it") == 0);
    int64_t s0[2] = {0, 0}, s1[2] = {4, COLS}, sh[2] = {4, COLS};
    int32_t part[4 * COLS];
    CHECK_RC(caterva_get_slice_buffer(ctx, h1, s0, s1, part, sh, sizeof(part)), CATERVA_ERR_CHANGED);

    /* h1's writes: into the array as it is, and h1's shape follows. */
    int64_t start[2] = {5, 0}, stop[2] = {6, COLS};
    row(r, 3000);
    CHECK_OK(caterva_set_slice_buffer(ctx, r, bshape, sizeof(r), start, stop, h1));
    CHECK(h1->shape[0] == 48);
    row(r, 3001);
    CHECK_OK(caterva_append(ctx, h1, r, sizeof(r), 0));
    CHECK(h1->shape[0] == 49 && h1->nitems == 49 * COLS);

    /* h2 is stale now: refreshed, it sees h1's writes. */
    out = read_all(ctx, h2, &rc);
    CHECK(out == NULL && rc == CATERVA_ERR_CHANGED);
    bool reloaded = false;
    CHECK_OK(caterva_refresh(ctx, h2, &reloaded));
    CHECK(reloaded && h2->shape[0] == 49);
    CHECK_OK(caterva_refresh(ctx, h2, &reloaded));
    CHECK(!reloaded);
    CHECK_OK(caterva_refresh(ctx, h2, NULL));
    CHECK_RC(caterva_refresh(NULL, h2, NULL), CATERVA_ERR_NULL_POINTER);

    int32_t want[49 * COLS];
    memset(want, 0, sizeof(want));
    for (int i = 0; i < 40; i++) {
        row(want + (i % 8) * COLS, 2000 + i);
        row(want + (8 + i) * COLS, 1000 + i);
    }
    row(want + 5 * COLS, 3000);
    row(want + 48 * COLS, 3001);
    caterva_array_t *h3 = NULL;
    CHECK_OK(caterva_open(ctx, path, &h3));
    caterva_array_t *all[3] = {h1, h2, h3};
    for (int k = 0; k < 3; k++) {
        out = read_all(ctx, all[k], &rc);
        CHECK(out != NULL && rc == CATERVA_SUCCEED);
        CHECK(memcmp(out, want, sizeof(want)) == 0);
        free(out);
    }
    CHECK_OK(caterva_free(ctx, &h1));
    CHECK_OK(caterva_free(ctx, &h2));
    CHECK_OK(caterva_free(ctx, &h3));
    CHECK_OK(caterva_remove(ctx, path));
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

static int test_stale_handles(const test_case_t *tc) {
    (void)tc;
    for (int contiguous = 0; contiguous < 2; contiguous++) {
        for (int checksums = 0; checksums < 2; checksums++) {
            if (stale_case(contiguous, checksums)) {
                fprintf(stderr, "    (contiguous %d, checksums %d)\n", contiguous, checksums);
                return 1;
            }
        }
    }
    return 0;
}

/* An array in memory has nothing to refresh. */
static int test_refresh_in_memory(const test_case_t *tc) {
    (void)tc;
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    caterva_params_t params = {.itemsize = 4, .ndim = 1, .shape = {10}};
    caterva_storage_t storage = {.chunkshape = {4}, .blockshape = {2}};
    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_zeros(ctx, &params, &storage, &arr));
    bool reloaded = true;
    CHECK_OK(caterva_refresh(ctx, arr, &reloaded));
    CHECK(!reloaded);
    CHECK_RC(caterva_refresh(ctx, NULL, &reloaded), CATERVA_ERR_NULL_POINTER);
    CHECK_OK(caterva_free(ctx, &arr));
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

void suite_stale(void) {
    RUN_CASE(test_stale_handles);
    RUN_CASE(test_refresh_in_memory);
}
