/*
 * Downstream C consumer built with `pkg-config --cflags --libs caterva`:
 * write an array of uint16 to a sparse frame (a directory), attach a
 * variable-length metalayer, reopen it and check items and metadata.
 * Exits non-zero on any failure.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <caterva.h>

#define CHECK(cond)                                                             \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            return 1;                                                           \
        }                                                                       \
    } while (0)

enum { N = 5000 };

int main(void) {
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK(caterva_ctx_new(&cfg, &ctx) == CATERVA_SUCCEED);

    static uint16_t data[N];
    for (int i = 0; i < N; i++) data[i] = (uint16_t)(i * 7);

    char urlpath[] = "consumer_pkgconfig.b2frame.d";
    caterva_params_t params = {.itemsize = sizeof(uint16_t), .ndim = 1, .shape = {N}};
    caterva_storage_t storage = {.chunkshape = {1024}, .blockshape = {256}, .contiguous = false, .urlpath = urlpath};
    CHECK(caterva_remove(ctx, urlpath) == CATERVA_SUCCEED);
    caterva_array_t *arr = NULL;
    CHECK(caterva_from_buffer(ctx, data, sizeof data, &params, &storage, &arr) == CATERVA_SUCCEED);
    char note[] = "written by the pkg-config consumer";
    caterva_metalayer_t vlmeta = {.name = "note", .sdata = (uint8_t *)note, .size = (int32_t)sizeof note};
    CHECK(caterva_vlmeta_add(ctx, arr, &vlmeta) == CATERVA_SUCCEED);
    CHECK(caterva_free(ctx, &arr) == CATERVA_SUCCEED);

    CHECK(caterva_open(ctx, urlpath, &arr) == CATERVA_SUCCEED);
    CHECK(arr->ndim == 1 && arr->shape[0] == N && arr->chunkshape[0] == 1024 && arr->nchunks == 5);
    static uint16_t back[N];
    CHECK(caterva_to_buffer(ctx, arr, back, sizeof back) == CATERVA_SUCCEED);
    CHECK(memcmp(back, data, sizeof data) == 0);
    caterva_metalayer_t got = {0};
    CHECK(caterva_vlmeta_get(ctx, arr, "note", &got) == CATERVA_SUCCEED);
    CHECK(got.size == (int32_t)sizeof note && memcmp(got.sdata, note, sizeof note) == 0);
    free(got.name);
    free(got.sdata);

    CHECK(caterva_free(ctx, &arr) == CATERVA_SUCCEED);
    CHECK(caterva_remove(ctx, urlpath) == CATERVA_SUCCEED);
    CHECK(caterva_ctx_free(&ctx) == CATERVA_SUCCEED);
    printf("consumer (pkg-config, C): ok\n");
    return 0;
}
