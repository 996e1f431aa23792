/* Durability levels (extension): caterva_set_durability and
 * caterva_get_durability. A handle starts at its context's level
 * (CATERVA_DURABILITY_NORMAL, or what CATERVA_DURABILITY says), keeps
 * the level it is given through writes and reshapes, writes the same data
 * at every level, and a handle opened later starts at the default again (the level
 * is not stored in the file); bad levels and pointers are refused and
 * change nothing. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* The level of a new context: CATERVA_DURABILITY_NORMAL, unless the
 * environment's CATERVA_DURABILITY names another. */
static int default_level(void) {
    const char *env = getenv("CATERVA_DURABILITY");
    if (env != NULL && strcmp(env, "full") == 0) {
        return CATERVA_DURABILITY_FULL;
    }
    if (env != NULL && strcmp(env, "process") == 0) {
        return CATERVA_DURABILITY_PROCESS;
    }
    return CATERVA_DURABILITY_NORMAL;
}

static int expect_level(caterva_ctx_t *ctx, caterva_array_t *arr, int want) {
    int got = -1;
    CHECK_OK(caterva_get_durability(ctx, arr, &got));
    CHECK(got == want);
    return 0;
}

static int test_durability(const test_case_t *tc) {
    if (h_skip_disk_itemsize(tc)) {
        return 0;
    }
    caterva_ctx_t *ctx = NULL;
    char path[256];
    caterva_params_t params;
    caterva_storage_t storage;
    CHECK_OK(h_setup(tc, "durability", &ctx, path, &params, &storage));
    int64_t n = h_nitems(params.ndim, params.shape);
    int64_t size = n * params.itemsize;
    uint8_t *buf = malloc(size > 0 ? (size_t)size : 1);
    CHECK(buf != NULL);
    h_fill_buffer(buf, n, params.itemsize);

    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_zeros(ctx, &params, &storage, &arr));
    if (expect_level(ctx, arr, default_level())) {
        return 1;
    }
    /* Refused, and nothing changes. */
    CHECK_RC(caterva_set_durability(ctx, arr, 3), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_set_durability(ctx, arr, -1), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_set_durability(ctx, NULL, CATERVA_DURABILITY_PROCESS), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_set_durability(NULL, arr, CATERVA_DURABILITY_PROCESS), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_get_durability(ctx, arr, NULL), CATERVA_ERR_NULL_POINTER);
    if (expect_level(ctx, arr, default_level())) {
        return 1;
    }

    /* A write and a grow at PROCESS; the level stays. (A 0-dim array or
     * one with an empty axis has nothing to write.) */
    CHECK_OK(caterva_set_durability(ctx, arr, CATERVA_DURABILITY_PROCESS));
    if (expect_level(ctx, arr, CATERVA_DURABILITY_PROCESS)) {
        return 1;
    }
    int64_t start[CATERVA_MAX_DIM] = {0}, stop[CATERVA_MAX_DIM], bshape[CATERVA_MAX_DIM];
    for (int i = 0; i < params.ndim; i++) {
        stop[i] = params.shape[i];
        bshape[i] = params.shape[i];
    }
    if (params.ndim > 0 && n > 0) {
        CHECK_OK(caterva_set_slice_buffer(ctx, buf, bshape, size, start, stop, arr));
        int64_t grown[CATERVA_MAX_DIM];
        memcpy(grown, arr->shape, sizeof(grown));
        grown[0] += 1;
        CHECK_OK(caterva_resize(ctx, arr, grown, NULL));
        if (expect_level(ctx, arr, CATERVA_DURABILITY_PROCESS)) {
            return 1;
        }
    }
    if (tc->backend.persistent) {
        /* Reopened: the items written, and the default level again. */
        CHECK_OK(caterva_free(ctx, &arr));
        CHECK_OK(caterva_open(ctx, path, &arr));
        if (expect_level(ctx, arr, default_level())) {
            return 1;
        }
    }
    int64_t asize = arr->nitems * arr->itemsize;
    uint8_t *out = malloc(asize > 0 ? (size_t)asize : 1);
    CHECK(out != NULL);
    CHECK_OK(caterva_to_buffer(ctx, arr, out, asize));
    /* Growing axis 0 at its end keeps the first n items where they were. */
    for (int64_t i = 0; params.ndim > 0 && i < n; i++) {
        CHECK(h_get(out, i, params.itemsize) == h_value(i, params.itemsize));
    }
    free(out);
    /* Writes at NORMAL (an epoch: its journal stays between them, and
     * another handle opens and reads the array meanwhile), then freed: the
     * epoch ends and the items are there. */
    CHECK_OK(caterva_set_durability(ctx, arr, CATERVA_DURABILITY_NORMAL));
    if (expect_level(ctx, arr, CATERVA_DURABILITY_NORMAL)) {
        return 1;
    }
    if (params.ndim > 0 && n > 0) {
        for (int k = 0; k < 3; k++) {
            CHECK_OK(caterva_set_slice_buffer(ctx, buf, bshape, size, start, stop, arr));
        }
        if (tc->backend.persistent) {
            caterva_array_t *other = NULL;
            CHECK_OK(caterva_open(ctx, path, &other));
            uint8_t *seen = malloc((size_t)size);
            CHECK(seen != NULL);
            CHECK_OK(caterva_get_slice_buffer(ctx, other, start, stop, seen, bshape, size));
            CHECK(memcmp(seen, buf, (size_t)size) == 0);
            free(seen);
            CHECK_OK(caterva_free(ctx, &other));
        }
    }
    /* And a write at FULL after one at PROCESS or NORMAL. */
    CHECK_OK(caterva_set_durability(ctx, arr, CATERVA_DURABILITY_FULL));
    if (params.ndim > 0 && n > 0) {
        CHECK_OK(caterva_set_slice_buffer(ctx, buf, bshape, size, start, stop, arr));
    }
    if (expect_level(ctx, arr, CATERVA_DURABILITY_FULL)) {
        return 1;
    }
    CHECK_OK(caterva_free(ctx, &arr));
    if (tc->backend.persistent) {
        CHECK_OK(caterva_remove(ctx, path));
    }
    free(buf);
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* caterva_ctx_set_durability: the level of the arrays a context creates and
 * opens from then on (earlier handles keep theirs); bad levels and contexts
 * are refused and change nothing. */
static int test_ctx_durability(const test_case_t *tc) {
    if (h_skip_disk_itemsize(tc)) {
        return 0;
    }
    caterva_ctx_t *ctx = NULL;
    char path[256];
    caterva_params_t params;
    caterva_storage_t storage;
    CHECK_OK(h_setup(tc, "ctx_durability", &ctx, path, &params, &storage));
    caterva_array_t *before = NULL, *arr = NULL;
    CHECK_OK(caterva_zeros(ctx, &params, &storage, &before));
    CHECK_RC(caterva_ctx_set_durability(ctx, 3), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(strstr(caterva_last_error(), "durability level 3") != NULL);
    CHECK_RC(caterva_ctx_set_durability(NULL, CATERVA_DURABILITY_PROCESS), CATERVA_ERR_NULL_POINTER);
    CHECK_OK(caterva_ctx_set_durability(ctx, CATERVA_DURABILITY_PROCESS));
    if (expect_level(ctx, before, default_level())) {
        return 1;
    }
    CHECK_OK(caterva_free(ctx, &before));
    int64_t n = h_nitems(params.ndim, params.shape);
    int64_t size = n * params.itemsize;
    uint8_t *buf = malloc(size > 0 ? (size_t)size : 1), *out = malloc(size > 0 ? (size_t)size : 1);
    CHECK(buf != NULL && out != NULL);
    h_fill_buffer(buf, n, params.itemsize);
    CHECK_OK(caterva_from_buffer(ctx, buf, size, &params, &storage, &arr));
    if (expect_level(ctx, arr, CATERVA_DURABILITY_PROCESS)) {
        return 1;
    }
    if (tc->backend.persistent) {
        CHECK_OK(caterva_free(ctx, &arr));
        CHECK_OK(caterva_open(ctx, path, &arr));
        if (expect_level(ctx, arr, CATERVA_DURABILITY_PROCESS)) {
            return 1;
        }
    }
    CHECK_OK(caterva_to_buffer(ctx, arr, out, size));
    CHECK(size == 0 || memcmp(buf, out, (size_t)size) == 0);
    CHECK_OK(caterva_free(ctx, &arr));
    if (tc->backend.persistent) {
        CHECK_OK(caterva_remove(ctx, path));
    }
    free(buf);
    free(out);
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* CATERVA_DURABILITY in the environment sets the level of new contexts;
 * a value that names none is refused by caterva_ctx_new, naming the
 * variable. (The suite runs in a process of its own, one test at a time.) */
static int test_env_durability(const test_case_t *tc) {
    (void)tc;
    const char *was = getenv("CATERVA_DURABILITY");
    char *saved = was != NULL ? strdup(was) : NULL;
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    const char *names[] = {"full", "normal", "process"};
    const int levels[] = {CATERVA_DURABILITY_FULL, CATERVA_DURABILITY_NORMAL, CATERVA_DURABILITY_PROCESS};
    caterva_params_t params = {.itemsize = 8, .ndim = 1, .shape = {10}};
    caterva_storage_t storage = {.chunkshape = {5}, .blockshape = {5}};
    for (int i = 0; i < 3; i++) {
        CHECK(setenv("CATERVA_DURABILITY", names[i], 1) == 0);
        CHECK_OK(caterva_ctx_new(&cfg, &ctx));
        caterva_array_t *arr = NULL;
        CHECK_OK(caterva_zeros(ctx, &params, &storage, &arr));
        if (expect_level(ctx, arr, levels[i])) {
            return 1;
        }
        CHECK_OK(caterva_free(ctx, &arr));
        CHECK_OK(caterva_ctx_free(&ctx));
    }
    CHECK(setenv("CATERVA_DURABILITY", "sometimes", 1) == 0);
    CHECK_RC(caterva_ctx_new(&cfg, &ctx), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(ctx == NULL);
    CHECK(strstr(caterva_last_error(), "CATERVA_DURABILITY") != NULL);
    if (saved != NULL) {
        CHECK(setenv("CATERVA_DURABILITY", saved, 1) == 0);
        free(saved);
    } else {
        CHECK(unsetenv("CATERVA_DURABILITY") == 0);
    }
    return 0;
}

void suite_durability(void) {
    RUN_ALL_CASES(test_durability);
    RUN_ALL_CASES(test_ctx_durability);
    RUN_CASE(test_env_durability);
}
