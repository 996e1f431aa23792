/* Concurrent reads: 8 POSIX threads read one caterva_array_t at once
 * (caterva_get_slice_buffer, caterva_get_orthogonal_selection,
 * caterva_to_buffer, the metalayer getters), on every backend, and compare
 * every byte with the C-order reference. Reads need no locking by the caller. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>

#include "harness.h"

#define NTHREADS 8
#define NREADS 32
#define ITEM 4
#define SENT 0xA5

static const int64_t SHAPE[3] = {23, 17, 11};
static const int32_t CHUNKS[3] = {7, 5, 4};
static const int32_t BLOCKS[3] = {3, 2, 3};

typedef struct {
    caterva_ctx_t *ctx;
    caterva_array_t *arr;
    const uint8_t *ref; /* the whole array, C order */
    uint64_t seed;
    int failed;         /* set by the thread on a mismatch or an error code */
    char why[160];
} reader_t;

/* xorshift64*: a small deterministic generator per thread. */
static uint64_t next_rand(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

/* Uniform in [lo, hi). */
static int64_t rand_range(uint64_t *s, int64_t lo, int64_t hi) {
    return lo + (int64_t)(next_rand(s) % (uint64_t)(hi - lo));
}

static int64_t linear(const int64_t *idx) {
    return (idx[0] * SHAPE[1] + idx[1]) * SHAPE[2] + idx[2];
}

static int fail(reader_t *r, const char *what, int64_t detail) {
    snprintf(r->why, sizeof(r->why), "%s (%" PRId64 ")", what, detail);
    r->failed = 1;
    return 1;
}

/* A random region read into a buffer up to 2 items larger on each axis;
 * items outside the region must keep the sentinel. */
static int read_region(reader_t *r, uint8_t *buf) {
    int64_t start[3], stop[3], bshape[3];
    for (int i = 0; i < 3; i++) {
        int64_t a = rand_range(&r->seed, 0, SHAPE[i] + 1), b = rand_range(&r->seed, 0, SHAPE[i] + 1);
        start[i] = a < b ? a : b;
        stop[i] = a < b ? b : a;
        bshape[i] = stop[i] - start[i] + rand_range(&r->seed, 0, 3);
    }
    int64_t n = bshape[0] * bshape[1] * bshape[2];
    memset(buf, SENT, (size_t)(n * ITEM));
    int rc = caterva_get_slice_buffer(r->ctx, r->arr, start, stop, buf, bshape, n * ITEM);
    if (rc != CATERVA_SUCCEED) {
        return fail(r, "caterva_get_slice_buffer failed", rc);
    }
    if (n == 0) {
        return 0;
    }
    int64_t j[3] = {0, 0, 0};
    do {
        const uint8_t *got = buf + h_linear(3, bshape, j) * ITEM;
        bool inside = j[0] < stop[0] - start[0] && j[1] < stop[1] - start[1] && j[2] < stop[2] - start[2];
        if (inside) {
            int64_t src[3] = {start[0] + j[0], start[1] + j[1], start[2] + j[2]};
            if (memcmp(got, r->ref + linear(src) * ITEM, ITEM) != 0) {
                return fail(r, "get_slice_buffer: wrong item at linear index", linear(src));
            }
        } else if (got[0] != SENT || got[1] != SENT || got[2] != SENT || got[3] != SENT) {
            return fail(r, "get_slice_buffer wrote outside the region, buffer item", h_linear(3, bshape, j));
        }
    } while (h_next_index(3, bshape, j));
    return 0;
}

/* A random orthogonal selection: unsorted lists with repeats. */
static int read_selection(reader_t *r, uint8_t *buf) {
    int64_t lists[3][6], size[3];
    int64_t *sel[3] = {lists[0], lists[1], lists[2]};
    for (int i = 0; i < 3; i++) {
        size[i] = rand_range(&r->seed, 1, 7);
        for (int k = 0; k < size[i]; k++) {
            lists[i][k] = rand_range(&r->seed, 0, SHAPE[i]);
        }
    }
    int64_t n = size[0] * size[1] * size[2];
    int rc = caterva_get_orthogonal_selection(r->ctx, r->arr, sel, size, buf, size, n * ITEM);
    if (rc != CATERVA_SUCCEED) {
        return fail(r, "caterva_get_orthogonal_selection failed", rc);
    }
    int64_t j[3] = {0, 0, 0};
    do {
        int64_t src[3] = {lists[0][j[0]], lists[1][j[1]], lists[2][j[2]]};
        if (memcmp(buf + h_linear(3, size, j) * ITEM, r->ref + linear(src) * ITEM, ITEM) != 0) {
            return fail(r, "orthogonal selection: wrong item at linear index", linear(src));
        }
    } while (h_next_index(3, size, j));
    return 0;
}

static int read_whole(reader_t *r, uint8_t *buf) {
    int64_t nbytes = SHAPE[0] * SHAPE[1] * SHAPE[2] * ITEM;
    int rc = caterva_to_buffer(r->ctx, r->arr, buf, nbytes);
    if (rc != CATERVA_SUCCEED) {
        return fail(r, "caterva_to_buffer failed", rc);
    }
    if (memcmp(buf, r->ref, (size_t)nbytes) != 0) {
        return fail(r, "caterva_to_buffer differs from the reference", 0);
    }
    return 0;
}

/* The metalayer getters, which must not touch the shared array either. */
static int read_meta(reader_t *r) {
    caterva_metalayer_t m = {NULL, NULL, 0};
    int rc = caterva_vlmeta_get(r->ctx, r->arr, "note", &m);
    if (rc != CATERVA_SUCCEED) {
        return fail(r, "caterva_vlmeta_get failed", rc);
    }
    bool ok = m.size == 5 && memcmp(m.sdata, "hello", 5) == 0;
    free(m.name);
    free(m.sdata);
    if (!ok) {
        return fail(r, "caterva_vlmeta_get: wrong content", m.size);
    }
    bool exists = false;
    rc = caterva_meta_exists(r->ctx, r->arr, "caterva", &exists);
    if (rc != CATERVA_SUCCEED || !exists) {
        return fail(r, "caterva_meta_exists failed", rc);
    }
    char *dtype = NULL;
    rc = caterva_get_dtype(r->ctx, r->arr, &dtype);
    ok = rc == CATERVA_SUCCEED && dtype != NULL && strcmp(dtype, "<u4") == 0;
    free(dtype);
    if (!ok) {
        return fail(r, "caterva_get_dtype failed", rc);
    }
    if (r->arr->ndim != 3 || r->arr->shape[0] != SHAPE[0] || r->arr->nitems != SHAPE[0] * SHAPE[1] * SHAPE[2]) {
        return fail(r, "the public fields changed", r->arr->ndim);
    }
    return 0;
}

static void *reader(void *arg) {
    reader_t *r = arg;
    /* Large enough for the whole array, or any region with its margin. */
    uint8_t *buf = malloc((size_t)((SHAPE[0] + 2) * (SHAPE[1] + 2) * (SHAPE[2] + 2) * ITEM));
    if (buf == NULL) {
        fail(r, "out of memory", 0);
        return NULL;
    }
    for (int k = 0; k < NREADS && !r->failed; k++) {
        int64_t what = rand_range(&r->seed, 0, 8);
        if (what == 0) {
            read_whole(r, buf);
        } else if (what == 1) {
            read_meta(r);
        } else if (what < 4) {
            read_selection(r, buf);
        } else {
            read_region(r, buf);
        }
    }
    free(buf);
    return NULL;
}

static int test_concurrent_reads(const test_case_t *tc) {
    (void)tc;
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    cfg.nthreads = 2; /* the readers also share the context's worker threads */
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    int64_t nitems = SHAPE[0] * SHAPE[1] * SHAPE[2];
    uint8_t *ref = malloc((size_t)(nitems * ITEM));
    CHECK(ref != NULL);
    h_fill_buffer(ref, nitems, ITEM);
    for (int b = 0; b < 4; b++) {
        char path[64];
        snprintf(path, sizeof(path), "ctest_threads.%s", BACKENDS[b].contiguous ? "b2frame" : "b2nd");
        CHECK_OK(caterva_remove(ctx, path));
        caterva_params_t params;
        caterva_storage_t storage;
        memset(&params, 0, sizeof(params));
        memset(&storage, 0, sizeof(storage));
        params.itemsize = ITEM;
        params.ndim = 3;
        for (int i = 0; i < 3; i++) {
            params.shape[i] = SHAPE[i];
            storage.chunkshape[i] = CHUNKS[i];
            storage.blockshape[i] = BLOCKS[i];
        }
        storage.contiguous = BACKENDS[b].contiguous;
        storage.urlpath = BACKENDS[b].persistent ? path : NULL;
        caterva_array_t *arr = NULL;
        CHECK_OK(caterva_from_buffer(ctx, ref, nitems * ITEM, &params, &storage, &arr));
        caterva_metalayer_t note = {"note", (uint8_t *)"hello", 5};
        CHECK_OK(caterva_vlmeta_add(ctx, arr, &note));

        pthread_t threads[NTHREADS];
        reader_t readers[NTHREADS];
        for (int t = 0; t < NTHREADS; t++) {
            readers[t] = (reader_t){ctx, arr, ref, 0x9E3779B97F4A7C15ULL ^ (uint64_t)(t + 1) * 0xD1B54A32D192ED03ULL,
                                    0, {0}};
            CHECK(pthread_create(&threads[t], NULL, reader, &readers[t]) == 0);
        }
        for (int t = 0; t < NTHREADS; t++) {
            CHECK(pthread_join(threads[t], NULL) == 0);
        }
        for (int t = 0; t < NTHREADS; t++) {
            if (readers[t].failed) {
                fprintf(stderr, "    backend %d, thread %d: %s\n", b, t, readers[t].why);
            }
            CHECK(!readers[t].failed);
        }
        CHECK_OK(caterva_free(ctx, &arr));
        CHECK_OK(caterva_remove(ctx, path));
    }
    free(ref);
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

void suite_threads(void) {
    RUN_CASE(test_concurrent_reads);
}
