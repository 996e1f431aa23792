/* caterva_set_dtype / caterva_get_dtype (extensions): the b2nd metalayer's
 * NumPy dtype, its default by item size, its checks, and that it survives
 * persistence and reshaping. */
#include <stdlib.h>

#include "harness.h"

/* The dtype of arr, compared with want (NULL: no b2nd metalayer). */
static int expect_dtype(caterva_ctx_t *ctx, caterva_array_t *arr, const char *want) {
    char *got = (char *)"sentinel";
    CHECK_OK(caterva_get_dtype(ctx, arr, &got));
    if (want == NULL) {
        CHECK(got == NULL);
        return 0;
    }
    CHECK(got != NULL);
    CHECK(strcmp(got, want) == 0);
    free(got);
    return 0;
}

static int test_dtype(const test_case_t *tc) {
    if (h_skip_disk_itemsize(tc)) {
        return 0;
    }
    caterva_ctx_t *ctx = NULL;
    char path[256];
    caterva_params_t params;
    caterva_storage_t storage;
    CHECK_OK(h_setup(tc, "dtype", &ctx, path, &params, &storage));
    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_zeros(ctx, &params, &storage, &arr));

    const char *dflt = tc->itemsize == 1 ? "|u1" : tc->itemsize == 2 ? "<u2" : tc->itemsize == 4 ? "<u4" : "<u8";
    if (expect_dtype(ctx, arr, dflt)) {
        return 1;
    }
    const char *mine = tc->itemsize == 1 ? "|i1" : tc->itemsize == 2 ? "<i2" : tc->itemsize == 4 ? "<f4" : "<f8";
    CHECK_OK(caterva_set_dtype(ctx, arr, mine));
    if (expect_dtype(ctx, arr, mine)) {
        return 1;
    }
    /* Wrong item size, not a dtype, too long, NULL: refused, dtype unchanged. */
    CHECK_RC(caterva_set_dtype(ctx, arr, tc->itemsize == 8 ? "<f4" : "<f8"), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_set_dtype(ctx, arr, "hello"), CATERVA_ERR_INVALID_ARGUMENT);
    char longer[CATERVA_DTYPE_MAXLEN + 2];
    memset(longer, 'V', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    CHECK_RC(caterva_set_dtype(ctx, arr, longer), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_set_dtype(ctx, arr, NULL), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_get_dtype(ctx, arr, NULL), CATERVA_ERR_NULL_POINTER);
    if (expect_dtype(ctx, arr, mine)) {
        return 1;
    }

    /* It follows the array through a reshape, a copy and a reopen. */
    if (tc->shape.ndim > 0) {
        int64_t grown[CATERVA_MAX_DIM];
        memcpy(grown, arr->shape, sizeof(grown));
        grown[0] += 3;
        CHECK_OK(caterva_resize(ctx, arr, grown, NULL));
        if (expect_dtype(ctx, arr, mine)) {
            return 1;
        }
    }
    caterva_storage_t mem = storage;
    mem.urlpath = NULL;
    mem.nmetalayers = 0;
    caterva_array_t *copy = NULL;
    CHECK_OK(caterva_copy(ctx, arr, &mem, &copy));
    if (expect_dtype(ctx, copy, mine)) {
        return 1;
    }
    CHECK_OK(caterva_free(ctx, &copy));
    if (tc->backend.persistent) {
        CHECK_OK(caterva_free(ctx, &arr));
        CHECK_OK(caterva_open(ctx, path, &arr));
        if (expect_dtype(ctx, arr, mine)) {
            return 1;
        }
    }
    CHECK_OK(caterva_free(ctx, &arr));
    if (tc->backend.persistent) {
        CHECK_OK(caterva_remove(ctx, path));
    }
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

void suite_dtype(void) {
    RUN_ALL_CASES(test_dtype);
}
