/*
 * demo.c: create a 3-D array from a buffer, persist it to disk, reopen it and
 * read slices along each axis, using only the caterva 0.5 C API.
 * Usage: demo [URLPATH [keep]] (default demo.b2frame; an s3:// URL works
 * too: examples/s3.sh); with "keep", the array is left there.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <caterva.h>

#define CHECK(rc)                                                              \
    do {                                                                       \
        int rc_ = (rc);                                                        \
        if (rc_ != CATERVA_SUCCEED) {                                          \
            fprintf(stderr, "%s:%d: caterva error %d\n", __FILE__, __LINE__, rc_); \
            return 1;                                                          \
        }                                                                      \
    } while (0)

int main(int argc, char **argv) {
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    cfg.nthreads = 2;
    caterva_ctx_t *ctx;
    CHECK(caterva_ctx_new(&cfg, &ctx));

    /* A 100 x 200 x 50 array of int64, item (i, j, k) = i*10000 + j*100 + k. */
    caterva_params_t params = {.itemsize = sizeof(int64_t), .ndim = 3, .shape = {100, 200, 50}};
    int64_t nitems = 100 * 200 * 50;
    int64_t *data = malloc(nitems * sizeof(int64_t));
    for (int64_t i = 0; i < 100; i++)
        for (int64_t j = 0; j < 200; j++)
            for (int64_t k = 0; k < 50; k++)
                data[(i * 200 + j) * 50 + k] = i * 10000 + j * 100 + k;

    char *urlpath = argc > 1 ? argv[1] : "demo.b2frame";
    caterva_storage_t storage = {
        .chunkshape = {20, 50, 25}, .blockshape = {10, 10, 25}, .contiguous = true, .urlpath = urlpath};
    CHECK(caterva_remove(ctx, urlpath));
    caterva_array_t *arr;
    CHECK(caterva_from_buffer(ctx, data, nitems * (int64_t)sizeof(int64_t), &params, &storage, &arr));
    printf("created %s: %" PRId64 " items in %" PRId64 " chunks, %" PRId64 " bytes compressed (ratio %.1fx)\n",
           urlpath, arr->nitems, arr->nchunks, arr->sc->cbytes, (double)arr->sc->nbytes / (double)arr->sc->cbytes);
    CHECK(caterva_free(ctx, &arr));

    /* Reopen from disk and read one plane along each axis. */
    CHECK(caterva_open(ctx, urlpath, &arr));
    caterva_print_meta(arr);
    int64_t *plane = malloc(100 * 200 * sizeof(int64_t)); /* the largest plane */
    for (int axis = 0; axis < 3; axis++) {
        int64_t start[3] = {0, 0, 0}, stop[3] = {100, 200, 50}, shape[3];
        start[axis] = 7;
        stop[axis] = 8;
        int64_t n = 1;
        for (int d = 0; d < 3; d++) {
            shape[d] = stop[d] - start[d];
            n *= shape[d];
        }
        CHECK(caterva_get_slice_buffer(ctx, arr, start, stop, plane, shape, n * (int64_t)sizeof(int64_t)));
        int64_t errors = 0;
        for (int64_t t = 0; t < n; t++) {
            int64_t idx[3], rem = t;
            for (int d = 2; d >= 0; d--) {
                idx[d] = start[d] + rem % shape[d];
                rem /= shape[d];
            }
            errors += plane[t] != idx[0] * 10000 + idx[1] * 100 + idx[2];
        }
        printf("plane 7 along axis %d: %" PRId64 " items, first %" PRId64 ", last %" PRId64 ", %s\n", axis, n,
               plane[0], plane[n - 1], errors ? "WRONG" : "correct");
        if (errors) return 1;
    }
    free(plane);
    free(data);
    CHECK(caterva_free(ctx, &arr));
    if (argc < 3 || strcmp(argv[2], "keep") != 0) CHECK(caterva_remove(ctx, urlpath));
    CHECK(caterva_ctx_free(&ctx));
    printf("demo ok\n");
    return 0;
}
