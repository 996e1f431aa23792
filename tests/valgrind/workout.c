/* More of the library under the leak gate: a context with worker threads
 * (nthreads 4), arrays written and read in parallel on the four storages,
 * save / open, a cframe, metalayers, a failing call (the last-error
 * message) and a second thread that makes its own calls. Every handle and
 * buffer is freed; whatever the library keeps for the process must be freed
 * by then or still reachable. */
#include <caterva.h>
#include <pthread.h>
#include <string.h>

#define N0 40
#define N1 30

#define TRY(expr)                                                                    \
    do {                                                                             \
        int rc_ = (expr);                                                            \
        if (rc_ != CATERVA_SUCCEED) {                                                \
            fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #expr,       \
                    print_error(rc_), caterva_last_error());                         \
            return 1;                                                                \
        }                                                                            \
    } while (0)

static int roundtrip(caterva_ctx_t *ctx, bool persistent, bool contiguous) {
    static int64_t data[N0 * N1], back[N0 * N1];
    for (int i = 0; i < N0 * N1; i++) {
        data[i] = i * 7 + 1;
    }
    const char *path = contiguous ? "valgrind_workout.b2frame" : "valgrind_workout.b2nd";
    caterva_params_t params = {0};
    params.itemsize = 8;
    params.ndim = 2;
    params.shape[0] = N0;
    params.shape[1] = N1;
    caterva_storage_t storage = {0};
    storage.chunkshape[0] = 16;
    storage.chunkshape[1] = 8;
    storage.blockshape[0] = 4;
    storage.blockshape[1] = 4;
    storage.contiguous = contiguous;
    storage.urlpath = persistent ? (char *) path : NULL;
    uint8_t meta[3] = {1, 2, 3};
    storage.metalayers[0].name = (char *) "vg";
    storage.metalayers[0].sdata = meta;
    storage.metalayers[0].size = 3;
    storage.nmetalayers = 1;
    if (persistent) {
        caterva_remove(ctx, (char *) path);
    }
    caterva_array_t *arr = NULL;
    TRY(caterva_from_buffer(ctx, data, sizeof data, &params, &storage, &arr));
    int64_t start[2] = {3, 5}, stop[2] = {37, 29}, shape[2] = {34, 24};
    static int64_t part[34 * 24];
    TRY(caterva_get_slice_buffer(ctx, arr, start, stop, part, shape, sizeof part));
    if (part[0] != data[3 * N1 + 5]) {
        return 1;
    }
    TRY(caterva_set_slice_buffer(ctx, part, shape, sizeof part, start, stop, arr));
    caterva_metalayer_t vl = {(char *) "note", (uint8_t *) "hello", 5};
    TRY(caterva_vlmeta_add(ctx, arr, &vl));
    caterva_metalayer_t got = {0};
    TRY(caterva_vlmeta_get(ctx, arr, "note", &got));
    free(got.name);
    free(got.sdata);
    uint8_t *frame = NULL;
    int64_t len = 0;
    bool needs_free = false;
    TRY(caterva_to_cframe(ctx, arr, &frame, &len, &needs_free));
    caterva_array_t *copy = NULL;
    TRY(caterva_from_cframe(ctx, frame, len, true, &copy));
    if (needs_free) {
        free(frame);
    }
    TRY(caterva_to_buffer(ctx, copy, back, sizeof back));
    if (memcmp(back, data, sizeof data) != 0) {
        return 1;
    }
    TRY(caterva_free(ctx, &copy));
    if (persistent) {
        TRY(caterva_free(ctx, &arr));
        TRY(caterva_open(ctx, path, &arr));
        TRY(caterva_to_buffer(ctx, arr, back, sizeof back));
        TRY(caterva_free(ctx, &arr));
        TRY(caterva_remove(ctx, (char *) path));
    } else {
        TRY(caterva_free(ctx, &arr));
    }
    return 0;
}

static void *other_thread(void *ctx) {
    /* A failure on this thread: its last error, then the thread ends. */
    caterva_array_t *arr = NULL;
    int rc = caterva_open((caterva_ctx_t *) ctx, "valgrind_missing.b2frame", &arr);
    if (rc == CATERVA_SUCCEED || strlen(caterva_last_error()) == 0) {
        return (void *) 1;
    }
    return roundtrip((caterva_ctx_t *) ctx, false, true) == 0 ? NULL : (void *) 1;
}

int main(void) {
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    cfg.nthreads = 4;
    caterva_ctx_t *ctx = NULL;
    TRY(caterva_ctx_new(&cfg, &ctx));
    for (int b = 0; b < 4; b++) {
        if (roundtrip(ctx, b >= 2, b % 2 == 0) != 0) {
            return 1;
        }
    }
    pthread_t t;
    void *res = NULL;
    if (pthread_create(&t, NULL, other_thread, ctx) != 0 || pthread_join(t, &res) != 0 || res != NULL) {
        return 1;
    }
    /* A failure on the main thread too. */
    if (caterva_ctx_new(NULL, NULL) != CATERVA_ERR_NULL_POINTER) {
        return 1;
    }
    TRY(caterva_ctx_free(&ctx));
    return 0;
}
