/*
 * persist_and_slice.c: a table of sensor readings (rows of 16 float64) kept in
 * one file: create it from a buffer, reopen it, append rows, reopen again and
 * read a block of rows and columns. Every item read is checked; exits
 * non-zero on any error. Uses only the caterva 0.5 C API.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <caterva.h>

#define CHECK(rc)                                                                  \
    do {                                                                           \
        int rc_ = (rc);                                                            \
        if (rc_ != CATERVA_SUCCEED) {                                              \
            fprintf(stderr, "%s:%d: caterva error %d\n", __FILE__, __LINE__, rc_); \
            exit(1);                                                               \
        }                                                                          \
    } while (0)

enum { COLS = 16, FIRST_ROWS = 50, MORE_ROWS = 25 };

/* Reading (row, col). */
static double reading(int64_t row, int64_t col) { return (double)row + (double)col / 100.0; }

/* Rows [first, first + n) of readings, row-major. */
static double *make_rows(int64_t first, int64_t n) {
    double *rows = malloc((size_t)(n * COLS) * sizeof(double));
    if (!rows) exit(1);
    for (int64_t r = 0; r < n; r++)
        for (int64_t c = 0; c < COLS; c++) rows[r * COLS + c] = reading(first + r, c);
    return rows;
}

int main(void) {
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    cfg.nthreads = 2;
    caterva_ctx_t *ctx;
    CHECK(caterva_ctx_new(&cfg, &ctx));

    /* Create: FIRST_ROWS rows, chunks of 32 rows, blocks of 8, in one file. */
    char urlpath[] = "readings.b2frame";
    caterva_params_t params = {.itemsize = sizeof(double), .ndim = 2, .shape = {FIRST_ROWS, COLS}};
    caterva_storage_t storage = {
        .chunkshape = {32, COLS}, .blockshape = {8, COLS}, .contiguous = true, .urlpath = urlpath};
    CHECK(caterva_remove(ctx, urlpath));
    double *rows = make_rows(0, FIRST_ROWS);
    caterva_array_t *arr;
    CHECK(caterva_from_buffer(ctx, rows, FIRST_ROWS * COLS * (int64_t)sizeof(double), &params, &storage, &arr));
    free(rows);
    CHECK(caterva_free(ctx, &arr));
    printf("created %s with %d rows\n", urlpath, FIRST_ROWS);

    /* Reopen and append MORE_ROWS rows along axis 0: the file grows in place. */
    CHECK(caterva_open(ctx, urlpath, &arr));
    rows = make_rows(FIRST_ROWS, MORE_ROWS);
    CHECK(caterva_append(ctx, arr, rows, MORE_ROWS * COLS * (int64_t)sizeof(double), 0));
    free(rows);
    CHECK(caterva_free(ctx, &arr));

    /* Reopen and read rows 40..60 (across the append), columns 3..7. */
    CHECK(caterva_open(ctx, urlpath, &arr));
    if (arr->shape[0] != FIRST_ROWS + MORE_ROWS || arr->shape[1] != COLS) {
        fprintf(stderr, "shape %" PRId64 " x %" PRId64 " after the append\n", arr->shape[0], arr->shape[1]);
        return 1;
    }
    printf("reopened: %" PRId64 " x %" PRId64 " in %" PRId64 " chunks, %" PRId64 " bytes compressed\n",
           arr->shape[0], arr->shape[1], arr->nchunks, arr->sc->cbytes);
    int64_t start[2] = {40, 3}, stop[2] = {60, 7}, shape[2] = {20, 4};
    double block[20][4];
    CHECK(caterva_get_slice_buffer(ctx, arr, start, stop, block, shape, sizeof block));
    for (int r = 0; r < 20; r++)
        for (int c = 0; c < 4; c++)
            if (block[r][c] != reading(start[0] + r, start[1] + c)) {
                fprintf(stderr, "item (%d, %d) is %g\n", r, c, block[r][c]);
                return 1;
            }
    printf("rows 40..60, columns 3..7: first %.2f, last %.2f, correct\n", block[0][0], block[19][3]);

    CHECK(caterva_free(ctx, &arr));
    CHECK(caterva_remove(ctx, urlpath));
    CHECK(caterva_ctx_free(&ctx));
    printf("persist_and_slice ok\n");
    return 0;
}
