/* An existing C program's view of a remote array: caterva_open takes a URL
 * where it took a path. Usage: read_url URL OUT — writes the array's items
 * to OUT; checks that a write of the first item (its own value) succeeds on
 * S3 and is refused as invalid storage on a web server, and that a URL with
 * nothing there fails to open. Exit status 0 when all held. */
#include <caterva.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: read_url URL OUT\n");
        return 2;
    }
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    caterva_array_t *arr = NULL;
    if (caterva_ctx_new(&cfg, &ctx) != CATERVA_SUCCEED) return 3;
    /* Storage options for this URL (here only the retries: the endpoint and
     * keys come from the environment); bad ones are refused, nothing set. */
    if (caterva_set_storage_options(argv[1], "retries=4; timeout=20") != CATERVA_SUCCEED ||
        caterva_set_storage_options(argv[1], "colour=red") != CATERVA_ERR_INVALID_ARGUMENT ||
        caterva_set_storage_options("/a/local/path", "retries=1") != CATERVA_ERR_INVALID_ARGUMENT ||
        caterva_set_storage_options(argv[1], NULL) != CATERVA_ERR_NULL_POINTER) {
        fprintf(stderr, "caterva_set_storage_options misbehaved\n");
        return 11;
    }
    int rc = caterva_open(ctx, argv[1], &arr);
    if (rc != CATERVA_SUCCEED) {
        fprintf(stderr, "caterva_open(%s): %d\n", argv[1], rc);
        return 4;
    }
    int64_t size = arr->nitems * arr->itemsize;
    void *buf = malloc((size_t)size);
    if (buf == NULL || caterva_to_buffer(ctx, arr, buf, size) != CATERVA_SUCCEED) return 5;
    FILE *f = fopen(argv[2], "wb");
    if (f == NULL || fwrite(buf, 1, (size_t)size, f) != (size_t)size || fclose(f) != 0) return 6;
    int64_t one[CATERVA_MAX_DIM], start[CATERVA_MAX_DIM], stop[CATERVA_MAX_DIM];
    for (int i = 0; i < arr->ndim; i++) {
        one[i] = 1;
        start[i] = 0;
        stop[i] = 1;
    }
    int s3 = strncmp(argv[1], "s3://", 5) == 0;
    int want = s3 ? CATERVA_SUCCEED : CATERVA_ERR_INVALID_STORAGE;
    rc = caterva_set_slice_buffer(ctx, buf, one, arr->itemsize, start, stop, arr);
    if (rc != want) {
        fprintf(stderr, "a write at %s returned %d, not %d\n", argv[1], rc, want);
        return 7;
    }
    /* Nothing a killed writer left: 0 removed on S3; refused on a web server. */
    int64_t removed = -1;
    rc = caterva_remove_orphans(ctx, arr, 0, &removed);
    if (rc != want || (s3 && removed != 0)) {
        fprintf(stderr, "caterva_remove_orphans at %s returned %d, %lld removed\n", argv[1], rc, (long long)removed);
        return 9;
    }
    if (caterva_remove_orphans(ctx, arr, -1, &removed) != CATERVA_ERR_INVALID_ARGUMENT ||
        caterva_remove_orphans(ctx, arr, 3600, NULL) != CATERVA_ERR_NULL_POINTER) {
        fprintf(stderr, "caterva_remove_orphans took a negative age or a NULL count\n");
        return 10;
    }
    free(buf);
    caterva_free(ctx, &arr);
    char missing[4096];
    snprintf(missing, sizeof missing, "%s.missing", argv[1]);
    rc = caterva_open(ctx, missing, &arr);
    if (rc != CATERVA_ERR_INVALID_STORAGE || arr != NULL) {
        fprintf(stderr, "opening %s returned %d\n", missing, rc);
        return 8;
    }
    caterva_ctx_free(&ctx);
    return 0;
}
