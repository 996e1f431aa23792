/* The minimal program of issue 26: six calls, every handle freed. Under
 * `valgrind --leak-check=full --error-exitcode=1` it must exit 0 ("All heap
 * blocks were freed", or what is left still reachable from globals). */
#include <caterva.h>

int main(void) {
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    if (caterva_ctx_new(&cfg, &ctx) != CATERVA_SUCCEED) {
        return 2;
    }
    char *urlpath = (char *) "valgrind_minimal.b2frame";
    caterva_remove(ctx, urlpath); /* whatever an earlier run left */
    caterva_params_t params = {0};
    params.itemsize = 8;
    params.ndim = 2;
    params.shape[0] = 10;
    params.shape[1] = 10;
    caterva_storage_t storage = {0};
    storage.chunkshape[0] = storage.chunkshape[1] = 5;
    storage.blockshape[0] = storage.blockshape[1] = 5;
    storage.contiguous = true;
    storage.urlpath = urlpath;
    caterva_array_t *arr = NULL;
    if (caterva_zeros(ctx, &params, &storage, &arr) != CATERVA_SUCCEED) {
        return 3;
    }
    if (caterva_free(ctx, &arr) != CATERVA_SUCCEED) {
        return 4;
    }
    if (caterva_remove(ctx, urlpath) != CATERVA_SUCCEED) {
        return 5;
    }
    return caterva_ctx_free(&ctx) == CATERVA_SUCCEED ? 0 : 6;
}
