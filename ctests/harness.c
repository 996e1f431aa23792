#include <stdlib.h>
#include <sys/stat.h>

#include "harness.h"

const shape_case_t SHAPES[] = {
    {0, {0}, {0}, {0}},                                                 /* 0-dim */
    {1, {5}, {3}, {2}},                                                 /* ragged 1-D */
    {2, {20, 0}, {7, 0}, {3, 0}},                                       /* empty axis */
    {2, {20, 10}, {7, 5}, {3, 5}},                                      /* ragged chunks */
    {2, {14, 10}, {8, 5}, {2, 2}},                                      /* ragged blocks */
    {2, {1, 1}, {1, 1}, {1, 1}},                                        /* length-1 axes */
    {3, {12, 10, 14}, {3, 5, 9}, {3, 4, 4}},
    {3, {10, 1, 7}, {4, 1, 7}, {2, 1, 3}},                              /* length-1 middle */
    {4, {10, 21, 20, 5}, {8, 7, 15, 3}, {5, 5, 10, 1}},
    {5, {6, 7, 8, 9, 10}, {3, 5, 4, 5, 2}, {1, 2, 3, 3, 2}},
    {6, {2, 3, 4, 5, 6, 7}, {2, 2, 2, 2, 2, 2}, {1, 1, 1, 1, 1, 1}},
};
const size_t NSHAPES = sizeof(SHAPES) / sizeof(SHAPES[0]);
const backend_t BACKENDS[4] = {{false, false}, {true, false}, {true, true}, {false, true}};
const uint8_t ITEMSIZES[4] = {1, 2, 4, 8};

int h_passed = 0;
int h_failed = 0;

void h_report(const char *test, const test_case_t *tc, int rc) {
    if (rc == 0) {
        h_passed++;
        return;
    }
    h_failed++;
    if (tc == NULL) {
        fprintf(stderr, "FAIL %s\n", test);
        return;
    }
    fprintf(stderr, "FAIL %s [itemsize %u, ndim %d, shape (", test, tc->itemsize, tc->shape.ndim);
    for (int i = 0; i < tc->shape.ndim; i++) {
        fprintf(stderr, "%s%" PRId64, i ? ", " : "", tc->shape.shape[i]);
    }
    fprintf(stderr, "), %s, %s]\n", tc->backend.contiguous ? "contiguous" : "sparse",
            tc->backend.persistent ? "on disk" : "in memory");
}

char *h_urlpath(const test_case_t *tc, const char *tag) {
    static char buf[256];
    if (!tc->backend.persistent) {
        return NULL;
    }
    snprintf(buf, sizeof(buf), "ctest_%s.%s", tag, tc->backend.contiguous ? "b2frame" : "b2nd");
    return buf;
}

int h_setup(const test_case_t *tc, const char *tag, caterva_ctx_t **ctx, char *path, caterva_params_t *params,
            caterva_storage_t *storage) {
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    int rc = caterva_ctx_new(&cfg, ctx);
    if (rc != CATERVA_SUCCEED) {
        return rc;
    }
    char *url = h_urlpath(tc, tag);
    path[0] = '\0';
    if (url != NULL) {
        snprintf(path, 256, "%s", url);
        rc = caterva_remove(*ctx, path);
    }
    h_fill(tc, params, storage, url != NULL ? path : NULL);
    return rc;
}

void h_fill(const test_case_t *tc, caterva_params_t *params, caterva_storage_t *storage, char *urlpath) {
    memset(params, 0, sizeof(*params));
    memset(storage, 0, sizeof(*storage));
    params->itemsize = tc->itemsize;
    params->ndim = tc->shape.ndim;
    for (int i = 0; i < tc->shape.ndim; i++) {
        params->shape[i] = tc->shape.shape[i];
        storage->chunkshape[i] = tc->shape.chunkshape[i];
        storage->blockshape[i] = tc->shape.blockshape[i];
    }
    storage->contiguous = tc->backend.contiguous;
    storage->urlpath = urlpath;
}

uint64_t h_value(int64_t i, uint8_t itemsize) {
    uint64_t v = (uint64_t)i + 1;
    if (itemsize < 8) {
        v &= ((uint64_t)1 << (8 * itemsize)) - 1;
    }
    return v;
}

void h_fill_buffer(void *buf, int64_t nitems, uint8_t itemsize) {
    uint8_t *b = buf;
    for (int64_t i = 0; i < nitems; i++) {
        uint64_t v = (uint64_t)i + 1;
        for (int k = 0; k < itemsize; k++) {
            b[i * itemsize + k] = k < 8 ? (uint8_t)(v >> (8 * k)) : 0;
        }
    }
}

uint64_t h_get(const void *buf, int64_t i, uint8_t itemsize) {
    const uint8_t *b = buf;
    uint64_t v = 0;
    for (int k = 0; k < itemsize && k < 8; k++) {
        v |= (uint64_t)b[i * itemsize + k] << (8 * k);
    }
    return v;
}

int64_t h_nitems(int8_t ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        n *= shape[i];
    }
    return n;
}

bool h_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

bool h_is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool h_next_index(int8_t ndim, const int64_t *shape, int64_t *idx) {
    for (int i = ndim - 1; i >= 0; i--) {
        if (++idx[i] < shape[i]) {
            return true;
        }
        idx[i] = 0;
    }
    return false;
}

int64_t h_linear(int8_t ndim, const int64_t *shape, const int64_t *idx) {
    int64_t pos = 0;
    for (int i = 0; i < ndim; i++) {
        pos = pos * shape[i] + idx[i];
    }
    return pos;
}

bool h_skip_disk_itemsize(const test_case_t *tc) {
    return tc->backend.persistent && (tc->itemsize == 2 || tc->itemsize == 4);
}

/* A small valid 2-D case: 4-byte items, shape {10, 8}, chunks {5, 4}, blocks {2, 2}. */
void h_small_params(caterva_params_t *params, caterva_storage_t *storage, char *urlpath, bool contiguous) {
    memset(params, 0, sizeof(*params));
    memset(storage, 0, sizeof(*storage));
    params->itemsize = 4;
    params->ndim = 2;
    params->shape[0] = 10;
    params->shape[1] = 8;
    storage->chunkshape[0] = 5;
    storage->chunkshape[1] = 4;
    storage->blockshape[0] = 2;
    storage->blockshape[1] = 2;
    storage->contiguous = contiguous;
    storage->urlpath = urlpath;
}

int h_small_frame(caterva_ctx_t *ctx, uint8_t *data, caterva_array_t **arr, uint8_t **frame, int64_t *len,
                  bool *needs_free) {
    caterva_params_t params;
    caterva_storage_t storage;
    h_small_params(&params, &storage, NULL, true);
    uint8_t items[10 * 8 * 4];
    h_fill_buffer(items, 80, 4);
    if (data != NULL) {
        memcpy(data, items, sizeof(items));
    }
    CHECK_OK(caterva_from_buffer(ctx, items, (int64_t)sizeof(items), &params, &storage, arr));
    CHECK_OK(caterva_to_cframe(ctx, *arr, frame, len, needs_free));
    return 0;
}
