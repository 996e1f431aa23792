/* caterva_import_blz / caterva_import_blz_column / caterva_export_blz
 * (extensions): arrays out to bcolz carray directories and Bloscpack files
 * with every checksum, and back, value for value; a ctable assembled from
 * exported columns; damaged and bad input refused. (tests/blz.rs reads the
 * files of the real bcolz-zipline and bloscpack.) */
#include <stdlib.h>
#include <sys/stat.h>

#include "harness.h"

/* A 3-D array of 8-byte items {37, 3, 2} (chunks of 8 rows: a leftover), dtype <f8, in memory. */
static int make(caterva_ctx_t *ctx, caterva_array_t **arr, double *data) {
    caterva_params_t params = {.itemsize = 8, .ndim = 3, .shape = {37, 3, 2}};
    caterva_storage_t storage = {.chunkshape = {8, 3, 2}, .blockshape = {4, 3, 2}};
    for (int i = 0; i < 37 * 6; i++) {
        data[i] = i * 0.5 - 7;
    }
    CHECK_OK(caterva_from_buffer(ctx, data, sizeof(double) * 37 * 6, &params, &storage, arr));
    CHECK_OK(caterva_set_dtype(ctx, *arr, "<f8"));
    return 0;
}

/* Import path (default partitions, in memory) and compare with data. */
static int expect(caterva_ctx_t *ctx, const char *path, const double *data, int64_t n) {
    caterva_storage_t storage = {0};
    caterva_array_t *back = NULL;
    CHECK_OK(caterva_import_blz(ctx, path, &storage, &back));
    CHECK(back->ndim == 3 && back->shape[0] == 37 && back->shape[1] == 3 && back->shape[2] == 2);
    double *got = malloc(sizeof(double) * n);
    CHECK(got != NULL);
    CHECK_OK(caterva_to_buffer(ctx, back, got, sizeof(double) * n));
    CHECK(memcmp(got, data, sizeof(double) * n) == 0);
    free(got);
    char *dtype = NULL;
    CHECK_OK(caterva_get_dtype(ctx, back, &dtype));
    CHECK(dtype != NULL && strcmp(dtype, "<f8") == 0);
    free(dtype);
    CHECK_OK(caterva_free(ctx, &back));
    return 0;
}

static int rm_rf(const char *path) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    return system(cmd);
}

static int test_blz_roundtrip(const test_case_t *tc) {
    (void)tc;
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    caterva_array_t *arr = NULL;
    double data[37 * 6];
    if (make(ctx, &arr, data)) {
        return 1;
    }
    const char *codecs[] = {"blosclz", "lz4", "lz4hc", "zlib", "zstd"};
    caterva_blz_options_t opts;
    CHECK_OK(caterva_blz_options_defaults(&opts));
    CHECK(opts.clevel == 5 && opts.shuffle == 1 && opts.cname == NULL && !opts.bloscpack);
    for (int i = 0; i < 5; i++) {
        char path[64];
        snprintf(path, sizeof path, "ctest_blz_%d.bcolz", i);
        rm_rf(path);
        opts.cname = codecs[i];
        opts.shuffle = (uint8_t)(i % 3);
        opts.chunklen = i == 0 ? 0 : 5 + i;
        CHECK_OK(caterva_export_blz(ctx, arr, path, &opts));
        CHECK(h_is_dir(path));
        if (expect(ctx, path, data, 37 * 6)) {
            return 1;
        }
        /* The target exists now: refused, left alone. */
        CHECK_RC(caterva_export_blz(ctx, arr, path, &opts), CATERVA_ERR_INVALID_STORAGE);
        CHECK(expect(ctx, path, data, 37 * 6) == 0);
        rm_rf(path);
    }
    for (uint8_t sum = CATERVA_BLZ_CHECKSUM_NONE; sum <= CATERVA_BLZ_CHECKSUM_SHA512; sum++) {
        char path[64];
        snprintf(path, sizeof path, "ctest_blz_%d.blp", sum);
        remove(path);
        CHECK_OK(caterva_blz_options_defaults(&opts));
        opts.bloscpack = true;
        opts.checksum = sum;
        opts.chunklen = 7;
        CHECK_OK(caterva_export_blz(ctx, arr, path, &opts));
        if (expect(ctx, path, data, 37 * 6)) {
            return 1;
        }
        /* Into a file array. */
        caterva_storage_t storage = {.contiguous = true, .urlpath = "ctest_blz.b2frame"};
        caterva_array_t *back = NULL;
        CHECK_OK(caterva_import_blz(ctx, path, &storage, &back));
        CHECK_OK(caterva_free(ctx, &back));
        CHECK_OK(caterva_open(ctx, "ctest_blz.b2frame", &back));
        CHECK(back->nitems == 37 * 6);
        CHECK_OK(caterva_free(ctx, &back));
        CHECK_OK(caterva_remove(ctx, "ctest_blz.b2frame"));
        if (sum != CATERVA_BLZ_CHECKSUM_NONE) {
            /* A flipped byte in the last chunk's payload (just before its
             * digest) fails its checksum. */
            static const long digest[] = {0, 4, 4, 16, 20, 28, 32, 48, 64};
            FILE *f = fopen(path, "r+b");
            CHECK(f != NULL);
            CHECK(fseek(f, -(digest[sum] + 5), SEEK_END) == 0);
            int c = fgetc(f);
            CHECK(fseek(f, -(digest[sum] + 5), SEEK_END) == 0);
            fputc(c ^ 0x10, f);
            fclose(f);
            CHECK_RC(caterva_import_blz(ctx, path, &storage, &back), CATERVA_ERR_BLOSC_FAILED);
            CHECK(back == NULL);
            CHECK(strstr(caterva_last_error(), "checksum") != NULL);
            CHECK(!h_exists("ctest_blz.b2frame"));
        }
        remove(path);
    }
    CHECK_OK(caterva_free(ctx, &arr));
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

static int test_blz_ctable(const test_case_t *tc) {
    (void)tc;
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    int64_t ids[100];
    int32_t vols[100];
    for (int i = 0; i < 100; i++) {
        ids[i] = 1000 + i;
        vols[i] = -i * 3;
    }
    caterva_params_t p8 = {.itemsize = 8, .ndim = 1, .shape = {100}};
    caterva_params_t p4 = {.itemsize = 4, .ndim = 1, .shape = {100}};
    caterva_storage_t st = {.chunkshape = {30}, .blockshape = {10}};
    caterva_array_t *a = NULL, *b = NULL;
    CHECK_OK(caterva_from_buffer(ctx, ids, sizeof ids, &p8, &st, &a));
    CHECK_OK(caterva_from_buffer(ctx, vols, sizeof vols, &p4, &st, &b));
    CHECK_OK(caterva_set_dtype(ctx, b, "<i4"));
    rm_rf("ctest_blz_table");
    CHECK(mkdir("ctest_blz_table", 0755) == 0);
    CHECK_OK(caterva_export_blz(ctx, a, "ctest_blz_table/id", NULL));
    CHECK_OK(caterva_export_blz(ctx, b, "ctest_blz_table/vol", NULL));
    FILE *f = fopen("ctest_blz_table/__rootdirs__", "w");
    CHECK(f != NULL);
    fputs("{\"names\": [\"id\", \"vol\"]}\n", f);
    fclose(f);
    caterva_storage_t storage = {0};
    caterva_array_t *back = NULL;
    /* A ctable needs a column. */
    CHECK_RC(caterva_import_blz(ctx, "ctest_blz_table", &storage, &back), CATERVA_ERR_INVALID_STORAGE);
    CHECK_RC(caterva_import_blz_column(ctx, "ctest_blz_table", "nope", &storage, &back),
             CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_OK(caterva_import_blz_column(ctx, "ctest_blz_table", "vol", &storage, &back));
    int32_t got[100];
    CHECK_OK(caterva_to_buffer(ctx, back, got, sizeof got));
    CHECK(memcmp(got, vols, sizeof got) == 0);
    CHECK_OK(caterva_free(ctx, &back));
    CHECK_OK(caterva_import_blz_column(ctx, "ctest_blz_table", "id", &storage, &back));
    int64_t got8[100];
    CHECK_OK(caterva_to_buffer(ctx, back, got8, sizeof got8));
    CHECK(memcmp(got8, ids, sizeof got8) == 0);
    CHECK_OK(caterva_free(ctx, &back));
    rm_rf("ctest_blz_table");
    CHECK_OK(caterva_free(ctx, &a));
    CHECK_OK(caterva_free(ctx, &b));
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

static int test_blz_bad_input(const test_case_t *tc) {
    (void)tc;
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    caterva_array_t *arr = NULL;
    double data[37 * 6];
    if (make(ctx, &arr, data)) {
        return 1;
    }
    caterva_storage_t storage = {0};
    caterva_array_t *back = NULL;
    CHECK_RC(caterva_import_blz(ctx, NULL, &storage, &back), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_import_blz(ctx, "ctest_blz_missing", &storage, &back), CATERVA_ERR_INVALID_STORAGE);
    CHECK_RC(caterva_import_blz(NULL, "x", &storage, &back), CATERVA_ERR_NULL_POINTER);
    CHECK(back == NULL);
    CHECK_RC(caterva_export_blz(ctx, arr, NULL, NULL), CATERVA_ERR_NULL_POINTER);
    caterva_blz_options_t opts;
    CHECK_OK(caterva_blz_options_defaults(&opts));
    CHECK_RC(caterva_blz_options_defaults(NULL), CATERVA_ERR_NULL_POINTER);
    opts.checksum = 9;
    opts.bloscpack = true;
    CHECK_RC(caterva_export_blz(ctx, arr, "ctest_blz_bad.blp", &opts), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_OK(caterva_blz_options_defaults(&opts));
    opts.cname = "snappy";
    CHECK_RC(caterva_export_blz(ctx, arr, "ctest_blz_bad.bcolz", &opts), CATERVA_ERR_INVALID_ARGUMENT);
    opts.cname = NULL;
    opts.clevel = 10;
    CHECK_RC(caterva_export_blz(ctx, arr, "ctest_blz_bad.bcolz", &opts), CATERVA_ERR_INVALID_ARGUMENT);
    opts.clevel = 5;
    opts.chunklen = -1;
    CHECK_RC(caterva_export_blz(ctx, arr, "ctest_blz_bad.bcolz", &opts), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(!h_exists("ctest_blz_bad.bcolz") && !h_exists("ctest_blz_bad.blp"));
    /* A file that is not Bloscpack. */
    FILE *f = fopen("ctest_blz_junk.blp", "wb");
    CHECK(f != NULL);
    fputs("blpk but not really a Bloscpack file", f);
    fclose(f);
    CHECK(caterva_import_blz(ctx, "ctest_blz_junk.blp", &storage, &back) != CATERVA_SUCCEED);
    CHECK(back == NULL);
    remove("ctest_blz_junk.blp");
    CHECK_OK(caterva_free(ctx, &arr));
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

void suite_blz(void) {
    RUN_CASE(test_blz_roundtrip);
    RUN_CASE(test_blz_ctable);
    RUN_CASE(test_blz_bad_input);
}
