/* caterva_propose_partitions (extension): for every shape of the suite, item
 * size and access pattern, the proposed shapes obey the partition rules and an
 * array made with them round-trips its items (in memory and in a file); each
 * pattern does what it says on a large array; the size overrides are taken;
 * bad arguments get the right code and message, and leave storage as it was. */
#include <stdlib.h>

#include "harness.h"

static const int ACCESSES[4] = {CATERVA_ACCESS_BALANCED, CATERVA_ACCESS_SMALL_READS, CATERVA_ACCESS_SCANS,
                                CATERVA_ACCESS_PLANES};

/* Propose shapes for the case with each pattern (planes along the last axis),
 * check the rules, and round-trip the case's items through an array made with them. */
static int test_propose_roundtrip(const test_case_t *tc) {
    if (h_skip_disk_itemsize(tc)) {
        return 0;
    }
    for (int a = 0; a < 4; a++) {
        caterva_ctx_t *ctx;
        char path[256];
        caterva_params_t params;
        caterva_storage_t storage;
        CHECK_OK(h_setup(tc, "partition", &ctx, path, &params, &storage));
        int axis = params.ndim > 0 ? params.ndim - 1 : 0;
        if (ACCESSES[a] == CATERVA_ACCESS_PLANES && params.ndim == 0) {
            CHECK_RC(caterva_propose_partitions(&params, ACCESSES[a], axis, 0, 0, 2, &storage),
                     CATERVA_ERR_INVALID_ARGUMENT);
            CHECK_OK(caterva_ctx_free(&ctx));
            continue;
        }
        /* Small targets, so that the suite's small shapes get several chunks and blocks. */
        CHECK_OK(caterva_propose_partitions(&params, ACCESSES[a], axis, 96 * params.itemsize, 8 * params.itemsize, 2,
                                            &storage));
        for (int i = 0; i < params.ndim; i++) {
            CHECK(storage.blockshape[i] >= 1);
            CHECK(storage.blockshape[i] <= storage.chunkshape[i]);
            CHECK(params.shape[i] == 0 || storage.chunkshape[i] <= params.shape[i]);
        }
        if (ACCESSES[a] == CATERVA_ACCESS_PLANES) {
            CHECK(storage.blockshape[axis] == 1);
        }
        int64_t n = h_nitems(params.ndim, params.shape);
        int64_t size = n * params.itemsize;
        uint8_t *in = malloc((size_t)size + 1), *out = malloc((size_t)size + 1);
        CHECK(in != NULL && out != NULL);
        h_fill_buffer(in, n, params.itemsize);
        caterva_array_t *arr;
        CHECK_OK(caterva_from_buffer(ctx, in, size, &params, &storage, &arr));
        CHECK_OK(caterva_to_buffer(ctx, arr, out, size));
        CHECK(size == 0 || memcmp(in, out, (size_t)size) == 0);
        for (int i = 0; i < params.ndim; i++) {
            CHECK(arr->chunkshape[i] == storage.chunkshape[i] && arr->blockshape[i] == storage.blockshape[i]);
        }
        CHECK_OK(caterva_free(ctx, &arr));
        if (storage.urlpath != NULL) {
            CHECK_OK(caterva_remove(ctx, storage.urlpath));
        }
        free(in);
        free(out);
        CHECK_OK(caterva_ctx_free(&ctx));
    }
    return 0;
}

static int64_t bytes_of(int8_t ndim, const int32_t *s, int64_t itemsize) {
    int64_t n = itemsize;
    for (int i = 0; i < ndim; i++) n *= s[i];
    return n;
}

/* The patterns' intents on the benchmark's array {300, 745, 400} of 8-byte items. */
static int test_patterns(const test_case_t *tc) {
    (void)tc;
    caterva_params_t params = {.itemsize = 8, .ndim = 3, .shape = {300, 745, 400}};
    caterva_storage_t bal = {0}, small = {0}, scans = {0};
    CHECK_OK(caterva_propose_partitions(&params, CATERVA_ACCESS_BALANCED, 0, 0, 0, 2, &bal));
    CHECK_OK(caterva_propose_partitions(&params, CATERVA_ACCESS_SMALL_READS, 0, 0, 0, 2, &small));
    CHECK_OK(caterva_propose_partitions(&params, CATERVA_ACCESS_SCANS, 0, 0, 0, 2, &scans));
    /* Balanced, 3 axes: a stack along axis 0 (blocks one item thin there, chunks thinner than wide). */
    CHECK(bal.blockshape[0] == 1 && bal.blockshape[1] > 1 && bal.blockshape[2] > 1);
    CHECK(bal.chunkshape[0] < bal.chunkshape[1] && bal.chunkshape[0] < bal.chunkshape[2]);
    CHECK(bytes_of(3, small.chunkshape, 8) < bytes_of(3, bal.chunkshape, 8));
    CHECK(bytes_of(3, bal.blockshape, 8) < bytes_of(3, scans.blockshape, 8));
    CHECK(bytes_of(3, bal.chunkshape, 8) < bytes_of(3, scans.chunkshape, 8));
    CHECK(bytes_of(3, bal.chunkshape, 8) <= 4 << 20 && bytes_of(3, bal.chunkshape, 8) >= 1 << 20);
    CHECK(scans.blockshape[2] == 400 && scans.chunkshape[2] == 400);
    for (int axis = 0; axis < 3; axis++) {
        caterva_storage_t planes = {0};
        CHECK_OK(caterva_propose_partitions(&params, CATERVA_ACCESS_PLANES, axis, 0, 0, 2, &planes));
        CHECK(planes.blockshape[axis] == 1);
        for (int i = 0; i < 3; i++) {
            CHECK(i == axis || planes.blockshape[i] >= 64);
        }
    }
    /* The overrides: 1 MiB chunks and 8 KiB blocks of a {1000, 1000} array of 4-byte items. */
    caterva_params_t p2 = {.itemsize = 4, .ndim = 2, .shape = {1000, 1000}};
    caterva_storage_t s2 = {0};
    CHECK_OK(caterva_propose_partitions(&p2, CATERVA_ACCESS_BALANCED, 0, 1 << 20, 8 << 10, 2, &s2));
    CHECK(s2.chunkshape[0] == 500 && s2.chunkshape[1] == 500);
    CHECK(s2.blockshape[0] == 46 && s2.blockshape[1] == 46);
    /* The proposal makes a valid array, also for an empty axis that grows later. */
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    caterva_array_t *arr;
    CHECK_OK(caterva_zeros(ctx, &params, &bal, &arr));
    CHECK_OK(caterva_free(ctx, &arr));
    caterva_params_t p3 = {.itemsize = 8, .ndim = 2, .shape = {0, 100}};
    caterva_storage_t s3 = {0};
    CHECK_OK(caterva_propose_partitions(&p3, CATERVA_ACCESS_BALANCED, 0, 0, 0, 1, &s3));
    CHECK(s3.chunkshape[0] > 1 && s3.chunkshape[1] == 100);
    CHECK_OK(caterva_empty(ctx, &p3, &s3, &arr));
    int64_t rows[3 * 100];
    for (int i = 0; i < 300; i++) rows[i] = i;
    CHECK_OK(caterva_append(ctx, arr, rows, sizeof(rows), 0));
    CHECK(arr->shape[0] == 3);
    CHECK_OK(caterva_free(ctx, &arr));
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* caterva_propose_config: the compression the library proposes, and only that changed. */
static int test_propose_config(const test_case_t *tc) {
    (void)tc;
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    cfg.nthreads = 3;
    cfg.usedict = 1;
    cfg.filters[0] = BLOSC_DELTA;
    CHECK_OK(caterva_propose_config(&cfg));
    CHECK(cfg.compcodec == BLOSC_LZ4 && cfg.complevel == 5 && cfg.compmeta == 0);
    CHECK(cfg.splitmode == BLOSC_AUTO_SPLIT && cfg.usedict == 0);
    CHECK(cfg.filters[0] == 0 && cfg.filters[BLOSC2_MAX_FILTERS - 1] == BLOSC_SHUFFLE);
    CHECK(cfg.nthreads == 3 && cfg.alloc == malloc && cfg.free == free && cfg.prefilter == NULL);
    /* It makes arrays: a stack proposed and written with it reads back. */
    caterva_ctx_t *ctx;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    caterva_params_t params = {.itemsize = 4, .ndim = 3, .shape = {24, 73, 144}};
    caterva_storage_t storage = {0};
    CHECK_OK(caterva_propose_partitions(&params, CATERVA_ACCESS_BALANCED, 0, 0, 0, 0, &storage));
    int64_t n = h_nitems(params.ndim, params.shape);
    float *in = malloc((size_t)n * 4), *plane = malloc(73 * 144 * 4);
    CHECK(in != NULL && plane != NULL);
    for (int64_t i = 0; i < n; i++) in[i] = (float)(i % 1000) * 0.25f;
    caterva_array_t *arr;
    CHECK_OK(caterva_from_buffer(ctx, in, n * 4, &params, &storage, &arr));
    CHECK(arr->sc->compcode == BLOSC_LZ4 && arr->sc->clevel == 5);
    int64_t start[3] = {7, 0, 0}, stop[3] = {8, 73, 144}, shape[3] = {1, 73, 144};
    CHECK_OK(caterva_get_slice_buffer(ctx, arr, start, stop, plane, shape, 73 * 144 * 4));
    CHECK(memcmp(plane, in + 7 * 73 * 144, 73 * 144 * 4) == 0);
    CHECK_OK(caterva_free(ctx, &arr));
    CHECK_OK(caterva_ctx_free(&ctx));
    free(in);
    free(plane);
    CHECK_RC(caterva_propose_config(NULL), CATERVA_ERR_NULL_POINTER);
    CHECK(strstr(caterva_last_error(), "cfg is NULL") != NULL);
    return 0;
}

/* Bad arguments: the code, the message, and storage left as it was. */
static int test_bad_arguments(const test_case_t *tc) {
    (void)tc;
    caterva_params_t params = {.itemsize = 8, .ndim = 2, .shape = {100, 100}};
    caterva_storage_t storage;
    memset(&storage, 0x5a, sizeof(storage));
    caterva_storage_t before = storage;
#define BAD(call, rc, frag)                                                          \
    do {                                                                             \
        CHECK_RC(call, rc);                                                          \
        CHECK(strstr(caterva_last_error(), "caterva_propose_partitions: ") == caterva_last_error()); \
        CHECK(strstr(caterva_last_error(), frag) != NULL);                           \
        CHECK(memcmp(&storage, &before, sizeof(storage)) == 0);                      \
    } while (0)
    BAD(caterva_propose_partitions(NULL, CATERVA_ACCESS_BALANCED, 0, 0, 0, 0, &storage), CATERVA_ERR_NULL_POINTER,
        "params is NULL");
    CHECK_RC(caterva_propose_partitions(&params, CATERVA_ACCESS_BALANCED, 0, 0, 0, 0, NULL),
             CATERVA_ERR_NULL_POINTER);
    BAD(caterva_propose_partitions(&params, 7, 0, 0, 0, 0, &storage), CATERVA_ERR_INVALID_ARGUMENT,
        "access 7 is not a CATERVA_ACCESS_* value");
    BAD(caterva_propose_partitions(&params, CATERVA_ACCESS_PLANES, 2, 0, 0, 0, &storage),
        CATERVA_ERR_INVALID_ARGUMENT, "axis 2");
    BAD(caterva_propose_partitions(&params, CATERVA_ACCESS_PLANES, -1, 0, 0, 0, &storage),
        CATERVA_ERR_INVALID_ARGUMENT, "axis -1 is negative");
    BAD(caterva_propose_partitions(&params, CATERVA_ACCESS_BALANCED, 0, -5, 0, 0, &storage),
        CATERVA_ERR_INVALID_ARGUMENT, "chunk_bytes -5 is negative");
    BAD(caterva_propose_partitions(&params, CATERVA_ACCESS_BALANCED, 0, 0, -1, 0, &storage),
        CATERVA_ERR_INVALID_ARGUMENT, "block_bytes -1 is negative");
    BAD(caterva_propose_partitions(&params, CATERVA_ACCESS_BALANCED, 0, 0, 0, -2, &storage),
        CATERVA_ERR_INVALID_ARGUMENT, "nthreads -2 is negative");
    params.ndim = 9;
    BAD(caterva_propose_partitions(&params, CATERVA_ACCESS_BALANCED, 0, 0, 0, 0, &storage),
        CATERVA_ERR_INVALID_ARGUMENT, "ndim 9");
    params.ndim = -1;
    BAD(caterva_propose_partitions(&params, CATERVA_ACCESS_BALANCED, 0, 0, 0, 0, &storage),
        CATERVA_ERR_INVALID_ARGUMENT, "ndim -1");
    params.ndim = 2;
    params.itemsize = 0;
    BAD(caterva_propose_partitions(&params, CATERVA_ACCESS_BALANCED, 0, 0, 0, 0, &storage),
        CATERVA_ERR_INVALID_ARGUMENT, "itemsize 0");
    params.itemsize = 8;
    params.shape[1] = -3;
    BAD(caterva_propose_partitions(&params, CATERVA_ACCESS_BALANCED, 0, 0, 0, 0, &storage),
        CATERVA_ERR_INVALID_ARGUMENT, "shape[1] = -3 is negative");
    params.shape[0] = INT64_MAX / 2;
    params.shape[1] = 3;
    BAD(caterva_propose_partitions(&params, CATERVA_ACCESS_BALANCED, 0, 0, 0, 0, &storage),
        CATERVA_ERR_INVALID_ARGUMENT, "too large");
#undef BAD
    return 0;
}

/* Whether two configs and storages hold the same choice (field by field:
 * padding bytes are not set by initialisers). */
static int same_choice(const caterva_config_t *a, const caterva_config_t *b, const caterva_storage_t *sa,
                       const caterva_storage_t *sb) {
    return a->compcodec == b->compcodec && a->compmeta == b->compmeta && a->complevel == b->complevel &&
           a->splitmode == b->splitmode && a->usedict == b->usedict &&
           memcmp(a->filters, b->filters, sizeof(a->filters)) == 0 &&
           memcmp(a->filtersmeta, b->filtersmeta, sizeof(a->filtersmeta)) == 0 &&
           memcmp(sa->chunkshape, sb->chunkshape, sizeof(sa->chunkshape)) == 0 &&
           memcmp(sa->blockshape, sb->blockshape, sizeof(sa->blockshape)) == 0;
}

/* caterva_tune: 32 MiB of int64 labels in long runs, each objective: the
 * choice is written into cfg and storage (speed keeps LZ4), reported, the
 * same twice, and an array made with it round-trips; small data gets the
 * default proposal; bad arguments get their code and message and leave
 * cfg and storage as they were. */
static int test_tune(const test_case_t *tc) {
    (void)tc;
    caterva_params_t params = {.itemsize = 8, .ndim = 3, .shape = {256, 128, 128}};
    int64_t n = 256 * 128 * 128, size = n * 8;
    int64_t *labels = malloc((size_t)size), *out = malloc((size_t)size);
    CHECK(labels != NULL && out != NULL);
    for (int64_t i = 0; i < n; i++) {
        labels[i] = i / 8192;
    }
    const int objectives[3] = {CATERVA_TUNE_SPEED, CATERVA_TUNE_BALANCED, CATERVA_TUNE_SIZE};
    const char *names[3] = {"speed: ", "balanced: ", "size: "};
    for (int o = 0; o < 3; o++) {
        caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS, again = CATERVA_CONFIG_DEFAULTS;
        caterva_storage_t storage = {0}, storage2 = {0};
        char *report = NULL;
        CHECK_OK(caterva_tune(labels, size, &params, objectives[o], 2, &cfg, &storage, &report));
        CHECK(report != NULL && strstr(report, names[o]) == report);
        CHECK(strstr(report, "candidates on samples of whole blocks") != NULL);
        free(report);
        CHECK_OK(caterva_tune(labels, size, &params, objectives[o], 2, &again, &storage2, NULL));
        CHECK(same_choice(&cfg, &again, &storage, &storage2));
        if (objectives[o] == CATERVA_TUNE_SPEED) {
            CHECK(cfg.compcodec == BLOSC_LZ4);
        }
        caterva_ctx_t *ctx;
        CHECK_OK(caterva_ctx_new(&cfg, &ctx));
        caterva_array_t *arr;
        CHECK_OK(caterva_from_buffer(ctx, labels, size, &params, &storage, &arr));
        CHECK_OK(caterva_to_buffer(ctx, arr, out, size));
        CHECK(memcmp(labels, out, (size_t)size) == 0);
        CHECK_OK(caterva_free(ctx, &arr));
        CHECK_OK(caterva_ctx_free(&ctx));
    }
    /* Under 32 MiB: the default proposal, and the report says so. */
    caterva_params_t small = {.itemsize = 8, .ndim = 1, .shape = {1000}};
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS, proposed = CATERVA_CONFIG_DEFAULTS;
    caterva_storage_t storage = {0}, rule = {0};
    char *report = NULL;
    CHECK_OK(caterva_tune(labels, 8000, &small, CATERVA_TUNE_BALANCED, 2, &cfg, &storage, &report));
    CHECK(report != NULL && strstr(report, "default rule") != NULL);
    free(report);
    CHECK_OK(caterva_propose_config(&proposed));
    CHECK_OK(caterva_propose_partitions(&small, CATERVA_ACCESS_BALANCED, 0, 0, 0, 2, &rule));
    CHECK(same_choice(&cfg, &proposed, &storage, &rule));
    /* Bad arguments. */
    caterva_config_t before_cfg = cfg;
    caterva_storage_t before = storage;
#define BAD(call, rc, frag)                                                               \
    do {                                                                                  \
        CHECK_RC(call, rc);                                                               \
        CHECK(strstr(caterva_last_error(), "caterva_tune: ") == caterva_last_error());    \
        CHECK(strstr(caterva_last_error(), frag) != NULL);                                \
        CHECK(same_choice(&cfg, &before_cfg, &storage, &before));                         \
    } while (0)
    BAD(caterva_tune(NULL, 8, &small, CATERVA_TUNE_BALANCED, 0, &cfg, &storage, NULL), CATERVA_ERR_NULL_POINTER,
        "data is NULL");
    BAD(caterva_tune(labels, -8, &small, CATERVA_TUNE_BALANCED, 0, &cfg, &storage, NULL),
        CATERVA_ERR_INVALID_ARGUMENT, "negative");
    BAD(caterva_tune(labels, 12, &small, CATERVA_TUNE_BALANCED, 0, &cfg, &storage, NULL),
        CATERVA_ERR_INVALID_ARGUMENT, "whole number of 8-byte items");
    BAD(caterva_tune(labels, 8, &small, 7, 0, &cfg, &storage, NULL), CATERVA_ERR_INVALID_ARGUMENT,
        "objective 7 is not a CATERVA_TUNE_* value");
    BAD(caterva_tune(labels, 8, NULL, CATERVA_TUNE_BALANCED, 0, &cfg, &storage, NULL), CATERVA_ERR_NULL_POINTER,
        "params is NULL");
    CHECK_RC(caterva_tune(labels, 8, &small, CATERVA_TUNE_BALANCED, 0, NULL, &storage, NULL), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_tune(labels, 8, &small, CATERVA_TUNE_BALANCED, 0, &cfg, NULL, NULL), CATERVA_ERR_NULL_POINTER);
#undef BAD
    free(labels);
    free(out);
    return 0;
}

void suite_partition(void) {
    RUN_ALL_CASES(test_propose_roundtrip);
    RUN_CASE(test_patterns);
    RUN_CASE(test_propose_config);
    RUN_CASE(test_bad_arguments);
    RUN_CASE(test_tune);
}
