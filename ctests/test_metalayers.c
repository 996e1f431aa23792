/* Fixed-size metalayers (given at creation) and variable-length metalayers. */
#include <stdlib.h>

#include "harness.h"

/* Fetch a (vl)metalayer and compare it with name/data/size. */
static int expect_layer(caterva_ctx_t *ctx, caterva_array_t *arr, const char *name, const void *data, int32_t size,
                        bool vl) {
    caterva_metalayer_t m = {NULL, NULL, -1};
    bool exists = false;
    if (vl) {
        CHECK_OK(caterva_vlmeta_exists(ctx, arr, name, &exists));
        CHECK(exists);
        CHECK_OK(caterva_vlmeta_get(ctx, arr, name, &m));
    } else {
        CHECK_OK(caterva_meta_exists(ctx, arr, name, &exists));
        CHECK(exists);
        CHECK_OK(caterva_meta_get(ctx, arr, name, &m));
    }
    CHECK(m.name != NULL);
    CHECK(m.name != name);
    CHECK(strcmp(m.name, name) == 0);
    CHECK(m.size == size);
    CHECK(m.sdata != NULL);
    CHECK(m.sdata != data);
    CHECK(memcmp(m.sdata, data, (size_t)size) == 0);
    free(m.name);
    free(m.sdata);
    return 0;
}

/* A failed get leaves the output as it was. */
static int expect_missing(caterva_ctx_t *ctx, caterva_array_t *arr, const char *name, bool vl) {
    bool exists = true;
    char sentinel_name[] = "sentinel";
    uint8_t sentinel_data[] = {42};
    caterva_metalayer_t m = {sentinel_name, sentinel_data, 12345};
    if (vl) {
        CHECK_OK(caterva_vlmeta_exists(ctx, arr, name, &exists));
        CHECK(!exists);
        CHECK(caterva_vlmeta_get(ctx, arr, name, &m) != CATERVA_SUCCEED);
    } else {
        CHECK_OK(caterva_meta_exists(ctx, arr, name, &exists));
        CHECK(!exists);
        CHECK(caterva_meta_get(ctx, arr, name, &m) != CATERVA_SUCCEED);
    }
    CHECK(m.name == sentinel_name && m.sdata == sentinel_data && m.size == 12345);
    return 0;
}

static int test_metalayers(const test_case_t *tc) {
    caterva_ctx_t *ctx = NULL;
    char path[256];
    caterva_params_t params;
    caterva_storage_t storage;
    CHECK_OK(h_setup(tc, "metalayers", &ctx, path, &params, &storage));

    /* Two user metalayers; the storage's buffers are copied at creation. */
    char name0[] = "date";
    char name1[] = "units";
    uint8_t data0[] = {0x20, 0x24, 0x01, 0x31, 0xAB, 0xCD};
    uint8_t data1[] = {'m', '/', 's', 0, 'k', 'g'};
    storage.metalayers[0].name = name0;
    storage.metalayers[0].sdata = data0;
    storage.metalayers[0].size = (int32_t)sizeof(data0);
    storage.metalayers[1].name = name1;
    storage.metalayers[1].sdata = data1;
    storage.metalayers[1].size = (int32_t)sizeof(data1);
    storage.nmetalayers = 2;

    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_zeros(ctx, &params, &storage, &arr));
    const uint8_t orig0[] = {0x20, 0x24, 0x01, 0x31, 0xAB, 0xCD};
    memset(data0, 0, sizeof(data0));
    memcpy(name0, "xxxx", 4);

    bool exists = false;
    CHECK_OK(caterva_meta_exists(ctx, arr, "date", &exists));
    CHECK(exists);
    exists = false;
    CHECK_OK(caterva_meta_exists(ctx, arr, "units", &exists));
    CHECK(exists);
    exists = false;
    CHECK_OK(caterva_meta_exists(ctx, arr, "caterva", &exists));
    CHECK(exists);
    exists = true;
    CHECK_OK(caterva_meta_exists(ctx, arr, "nope", &exists));
    CHECK(!exists);
    /* Fixed-size and variable-length layers are separate namespaces. */
    exists = true;
    CHECK_OK(caterva_vlmeta_exists(ctx, arr, "date", &exists));
    CHECK(!exists);
    if (expect_layer(ctx, arr, "date", orig0, 6, false) || expect_layer(ctx, arr, "units", data1, 6, false) ||
        expect_missing(ctx, arr, "nope", false)) {
        return 1;
    }

    /* meta_update with the same size replaces the content. */
    uint8_t new0[] = {9, 8, 7, 6, 5, 4};
    caterva_metalayer_t m = {"date", new0, (int32_t)sizeof(new0)};
    CHECK_OK(caterva_meta_update(ctx, arr, &m));
    if (expect_layer(ctx, arr, "date", new0, 6, false) || expect_layer(ctx, arr, "units", data1, 6, false)) {
        return 1;
    }
    /* A different size is refused and the content stays. */
    uint8_t longer[] = {1, 2, 3, 4, 5, 6, 7};
    m.sdata = longer;
    m.size = (int32_t)sizeof(longer);
    CHECK_RC(caterva_meta_update(ctx, arr, &m), CATERVA_ERR_INVALID_ARGUMENT);
    m.size = 5;
    CHECK_RC(caterva_meta_update(ctx, arr, &m), CATERVA_ERR_INVALID_ARGUMENT);
    if (expect_layer(ctx, arr, "date", new0, 6, false)) {
        return 1;
    }
    /* A missing metalayer cannot be updated, nor created by an update. */
    m.name = "nope";
    m.size = 6;
    CHECK(caterva_meta_update(ctx, arr, &m) != CATERVA_SUCCEED);
    if (expect_missing(ctx, arr, "nope", false)) {
        return 1;
    }

    /* Variable-length metalayers. */
    if (expect_missing(ctx, arr, "notes", true)) {
        return 1;
    }
    char text[] = "some notes";
    caterva_metalayer_t vl = {"notes", (uint8_t *)text, (int32_t)sizeof(text)};
    CHECK_OK(caterva_vlmeta_add(ctx, arr, &vl));
    if (expect_layer(ctx, arr, "notes", "some notes", (int32_t)sizeof(text), true)) {
        return 1;
    }
    /* The caller's buffer is copied. */
    memset(text, 'z', sizeof(text) - 1);
    if (expect_layer(ctx, arr, "notes", "some notes", (int32_t)sizeof(text), true)) {
        return 1;
    }
    /* It is not a fixed-size metalayer. */
    exists = true;
    CHECK_OK(caterva_meta_exists(ctx, arr, "notes", &exists));
    CHECK(!exists);
    /* Adding an existing name fails and leaves the content. */
    uint8_t other[] = {1, 2};
    vl.sdata = other;
    vl.size = 2;
    CHECK(caterva_vlmeta_add(ctx, arr, &vl) != CATERVA_SUCCEED);
    if (expect_layer(ctx, arr, "notes", "some notes", 11, true)) {
        return 1;
    }
    /* Update to a longer, then a shorter content. */
    uint8_t big[1000];
    for (int i = 0; i < 1000; i++) {
        big[i] = (uint8_t)(i ^ (i >> 3));
    }
    vl.sdata = big;
    vl.size = (int32_t)sizeof(big);
    CHECK_OK(caterva_vlmeta_update(ctx, arr, &vl));
    if (expect_layer(ctx, arr, "notes", big, 1000, true)) {
        return 1;
    }
    vl.sdata = other;
    vl.size = 2;
    CHECK_OK(caterva_vlmeta_update(ctx, arr, &vl));
    if (expect_layer(ctx, arr, "notes", other, 2, true)) {
        return 1;
    }
    /* A second vlmetalayer. */
    uint8_t second[] = {0, 0, 0, 0xFF};
    caterva_metalayer_t vl2 = {"second", second, 4};
    CHECK_OK(caterva_vlmeta_add(ctx, arr, &vl2));
    if (expect_layer(ctx, arr, "second", second, 4, true) || expect_layer(ctx, arr, "notes", other, 2, true)) {
        return 1;
    }
    /* Updating a missing vlmetalayer fails and does not create it. */
    vl2.name = "missing";
    CHECK(caterva_vlmeta_update(ctx, arr, &vl2) != CATERVA_SUCCEED);
    if (expect_missing(ctx, arr, "missing", true)) {
        return 1;
    }
    /* The array's data is untouched by all this. */
    int64_t nitems = h_nitems(tc->shape.ndim, tc->shape.shape);
    CHECK(arr->nitems == nitems);

    CHECK_OK(caterva_free(ctx, &arr));
    if (storage.urlpath != NULL) {
        /* Everything survives on disk. */
        CHECK_OK(caterva_open(ctx, path, &arr));
        if (expect_layer(ctx, arr, "date", new0, 6, false) || expect_layer(ctx, arr, "units", data1, 6, false) ||
            expect_layer(ctx, arr, "notes", other, 2, true) || expect_layer(ctx, arr, "second", second, 4, true) ||
            expect_missing(ctx, arr, "nope", false) || expect_missing(ctx, arr, "missing", true)) {
            return 1;
        }
        exists = false;
        CHECK_OK(caterva_meta_exists(ctx, arr, "caterva", &exists));
        CHECK(exists);
        /* And changes made after reopening persist as well. */
        vl.sdata = big;
        vl.size = 700;
        CHECK_OK(caterva_vlmeta_update(ctx, arr, &vl));
        m.name = "units";
        m.sdata = new0;
        m.size = 6;
        CHECK_OK(caterva_meta_update(ctx, arr, &m));
        CHECK_OK(caterva_free(ctx, &arr));
        CHECK_OK(caterva_open(ctx, path, &arr));
        if (expect_layer(ctx, arr, "notes", big, 700, true) || expect_layer(ctx, arr, "units", new0, 6, false) ||
            expect_layer(ctx, arr, "date", new0, 6, false)) {
            return 1;
        }
        /* The data is still all zeros. */
        int64_t nbytes = nitems * tc->itemsize;
        uint8_t *buf = malloc((size_t)nbytes + 1);
        CHECK(buf != NULL);
        memset(buf, 0x33, (size_t)nbytes + 1);
        CHECK_OK(caterva_to_buffer(ctx, arr, buf, nbytes));
        for (int64_t i = 0; i < nbytes; i++) {
            CHECK(buf[i] == 0);
        }
        free(buf);
        CHECK_OK(caterva_free(ctx, &arr));
        CHECK_OK(caterva_remove(ctx, path));
    }
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* The 'caterva' metalayer is reserved: it cannot be updated, nor used as a vlmetalayer name clash. */
static int test_caterva_meta_reserved(const test_case_t *tc) {
    (void)tc;
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    caterva_params_t params = {0};
    caterva_storage_t storage = {0};
    params.itemsize = 4;
    params.ndim = 2;
    params.shape[0] = 10;
    params.shape[1] = 10;
    storage.chunkshape[0] = 6;
    storage.chunkshape[1] = 6;
    storage.blockshape[0] = 4;
    storage.blockshape[1] = 4;
    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_zeros(ctx, &params, &storage, &arr));
    caterva_metalayer_t before = {NULL, NULL, 0};
    CHECK_OK(caterva_meta_get(ctx, arr, "caterva", &before));
    CHECK(before.size > 0);

    /* Overwrite it with bytes of the same length that describe another shape. */
    uint8_t *other = malloc((size_t)before.size);
    CHECK(other != NULL);
    memcpy(other, before.sdata, (size_t)before.size);
    other[12] = 0x0b; /* shape[0] = 11 */
    caterva_metalayer_t m = {"caterva", other, before.size};
    CHECK(caterva_meta_update(ctx, arr, &m) != CATERVA_SUCCEED);
    caterva_metalayer_t after = {NULL, NULL, 0};
    CHECK_OK(caterva_meta_get(ctx, arr, "caterva", &after));
    CHECK(after.size == before.size && memcmp(after.sdata, before.sdata, (size_t)before.size) == 0);
    CHECK(arr->shape[0] == 10 && arr->shape[1] == 10);
    free(other);
    free(before.name);
    free(before.sdata);
    free(after.name);
    free(after.sdata);
    CHECK_OK(caterva_free(ctx, &arr));
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* The most user metalayers allowed (CATERVA_MAX_METALAYERS) all arrive. */
static int test_max_metalayers(const test_case_t *tc) {
    (void)tc;
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    caterva_params_t params = {0};
    caterva_storage_t storage = {0};
    params.itemsize = 1;
    params.ndim = 1;
    params.shape[0] = 10;
    storage.chunkshape[0] = 5;
    storage.blockshape[0] = 5;
    char names[CATERVA_MAX_METALAYERS][16];
    uint8_t data[CATERVA_MAX_METALAYERS][CATERVA_MAX_METALAYERS + 1];
    for (int i = 0; i < CATERVA_MAX_METALAYERS; i++) {
        snprintf(names[i], sizeof(names[i]), "layer%d", i);
        for (int k = 0; k <= i; k++) {
            data[i][k] = (uint8_t)(i * 16 + k);
        }
        storage.metalayers[i].name = names[i];
        storage.metalayers[i].sdata = data[i];
        storage.metalayers[i].size = i + 1;
    }
    storage.nmetalayers = CATERVA_MAX_METALAYERS;
    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_zeros(ctx, &params, &storage, &arr));
    for (int i = 0; i < CATERVA_MAX_METALAYERS; i++) {
        if (expect_layer(ctx, arr, names[i], data[i], i + 1, false)) {
            return 1;
        }
    }
    bool exists = false;
    CHECK_OK(caterva_meta_exists(ctx, arr, "caterva", &exists));
    CHECK(exists);
    CHECK_OK(caterva_free(ctx, &arr));
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* A frame holds at most 16 vlmetalayers (c-blosc2 writes no more into its
 * trailer): the 17th is refused up front, in every storage, and the array
 * is unchanged, saved and reopened with its 16. */
static int test_max_vlmetalayers(const test_case_t *tc) {
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    char path[256] = "";
    caterva_params_t params = {0};
    caterva_storage_t storage = {0};
    char *url = NULL;
    if (tc->backend.persistent) {
        snprintf(path, sizeof(path), "ctest_max_vlmeta%s", tc->backend.contiguous ? ".b2frame" : ".b2nd");
        caterva_remove(ctx, path);
        url = path;
    }
    h_small_params(&params, &storage, url, tc->backend.contiguous);
    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_zeros(ctx, &params, &storage, &arr));
    char name[16];
    uint8_t content[3] = {1, 2, 3};
    caterva_metalayer_t vl = {.name = name, .sdata = content, .size = 3};
    for (int i = 0; i < 16; i++) {
        snprintf(name, sizeof(name), "v%d", i);
        content[0] = (uint8_t)i;
        CHECK_OK(caterva_vlmeta_add(ctx, arr, &vl));
    }
    snprintf(name, sizeof(name), "extra");
    CHECK_RC(caterva_vlmeta_add(ctx, arr, &vl), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(strstr(caterva_last_error(), "no room for vlmetalayer 'extra'") != NULL);
    if (expect_missing(ctx, arr, "extra", true)) {
        return 1;
    }
    uint8_t *frame = NULL;
    int64_t len = 0;
    bool needs_free = false;
    CHECK_OK(caterva_to_cframe(ctx, arr, &frame, &len, &needs_free));
    caterva_array_t *back = NULL;
    CHECK_OK(caterva_from_cframe(ctx, frame, len, true, &back));
    if (needs_free) {
        free(frame);
    }
    content[0] = 15;
    if (expect_layer(ctx, back, "v15", content, 3, true)) {
        return 1;
    }
    CHECK_OK(caterva_free(ctx, &back));
    CHECK_OK(caterva_free(ctx, &arr));
    if (url != NULL) {
        CHECK_OK(caterva_open(ctx, url, &arr));
        if (expect_layer(ctx, arr, "v15", content, 3, true) || expect_missing(ctx, arr, "extra", true)) {
            return 1;
        }
        CHECK_OK(caterva_free(ctx, &arr));
        CHECK_OK(caterva_remove(ctx, url));
    }
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

void suite_metalayers(void) {
    RUN_ALL_CASES(test_metalayers);
    RUN_CASE(test_caterva_meta_reserved);
    RUN_CASE(test_max_metalayers);
    for (size_t b = 0; b < 4; b++) {
        test_case_t tc = {.itemsize = 4, .backend = BACKENDS[b]};
        h_report("test_max_vlmetalayers", &tc, test_max_vlmetalayers(&tc));
    }
}
