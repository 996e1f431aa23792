/*
 * Downstream C consumer (CMake, find_package(Caterva)): build an in-memory
 * array, overwrite a slice, read slices back and check every item; check that
 * bad input gives an error code. Exits non-zero on any failure.
 */
#include <stdint.h>
#include <stdio.h>

#include <caterva.h>

#define CHECK(cond)                                                             \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            return 1;                                                           \
        }                                                                       \
    } while (0)

enum { ROWS = 60, COLS = 40 };

int main(int argc, char **argv) {
    (void)argc;
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK(caterva_ctx_new(&cfg, &ctx) == CATERVA_SUCCEED);

    /* A ROWS x COLS int32 array of zeros, with ragged chunks and blocks. */
    caterva_params_t params = {.itemsize = sizeof(int32_t), .ndim = 2, .shape = {ROWS, COLS}};
    caterva_storage_t storage = {.chunkshape = {25, 16}, .blockshape = {10, 8}};
    caterva_array_t *arr = NULL;
    CHECK(caterva_zeros(ctx, &params, &storage, &arr) == CATERVA_SUCCEED);
    CHECK(arr->nitems == ROWS * COLS && arr->nchunks == 3 * 3);

    /* Write rows 10..30, columns 5..35 with value r * 1000 + c. */
    static int32_t patch[20][30];
    for (int r = 0; r < 20; r++)
        for (int c = 0; c < 30; c++) patch[r][c] = (10 + r) * 1000 + (5 + c);
    int64_t start[2] = {10, 5}, stop[2] = {30, 35}, pshape[2] = {20, 30};
    CHECK(caterva_set_slice_buffer(ctx, patch, pshape, sizeof patch, start, stop, arr) == CATERVA_SUCCEED);

    /* Read the whole array back: the patch where written, zeros elsewhere. */
    static int32_t all[ROWS][COLS];
    CHECK(caterva_to_buffer(ctx, arr, all, sizeof all) == CATERVA_SUCCEED);
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++) {
            int inside = r >= 10 && r < 30 && c >= 5 && c < 35;
            CHECK(all[r][c] == (inside ? r * 1000 + c : 0));
        }

    /* One column, across the patch's edge. */
    int32_t column[ROWS];
    int64_t cstart[2] = {0, 7}, cstop[2] = {ROWS, 8}, cshape[2] = {ROWS, 1};
    CHECK(caterva_get_slice_buffer(ctx, arr, cstart, cstop, column, cshape, sizeof column) == CATERVA_SUCCEED);
    for (int r = 0; r < ROWS; r++) CHECK(column[r] == (r >= 10 && r < 30 ? r * 1000 + 7 : 0));

    /* A slice past the end is refused, and leaves the buffer alone. */
    int64_t bad_stop[2] = {ROWS + 1, 8};
    column[0] = -1;
    CHECK(caterva_get_slice_buffer(ctx, arr, cstart, bad_stop, column, cshape, sizeof column) ==
          CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(column[0] == -1);

    CHECK(caterva_free(ctx, &arr) == CATERVA_SUCCEED && arr == NULL);
    CHECK(caterva_ctx_free(&ctx) == CATERVA_SUCCEED);
    printf("%s (CMake, C, caterva %d.%d API): ok\n", argv[0], CATERVA_VERSION_MAJOR, CATERVA_VERSION_MINOR);
    return 0;
}
