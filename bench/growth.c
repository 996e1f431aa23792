/*
 * bench/growth.c: the cost of growing an array by K chunks, K = 1, 10, 100,
 * 1k, 10k, 100k, 1M (--quick: up to 10k), on the three storages: in memory
 * (contiguous frame), a frame file and a sparse-frame directory.
 *
 * The array: 1-d, int64 items, chunks and blocks of CHUNK items, ZSTD 5 with
 * shuffle, 2 threads (both libraries). It starts as one chunk of data
 * (untimed) and grows at the end by K chunks of zeros. For each storage and K:
 *   - resize:       caterva_resize to the final shape (ours);
 *   - resize+xxh3:  the same on an array that keeps checksums;
 *   - zeros:        caterva_zeros of the final shape (ours, the floor: the
 *                   array made directly, with its K + 1 chunks);
 *   - b2nd_resize:  c-blosc2 2.15's b2nd_resize on a b2nd array made the same way.
 * Each cell is the median (and the maximum) of the repetitions (5 up to 10k
 * chunks, 3 above; see --quick) in milliseconds; creating the starting
 * array and removing files are not timed. After every caterva resize the first chunk, an item
 * of the last one and the item count are checked (and, on disk, the array
 * is reopened and checked again, untimed). A cell whose median for the
 * previous K was over the time limit (2 s per repetition; --quick 0.1 s) is
 * not run: it would take at least ten times as long ("skipped"). --quick
 * also makes 3 repetitions (5 otherwise; --reps N sets them).
 * The last column is the time per added chunk of ours (resize), in µs.
 *
 * Journal syncs (CATERVA_JOURNAL_SYNC) are whatever the environment says
 * (default: on; the header of the report says which).
 *
 * Run: bash bench/growth.sh [--quick] [--reps N]
 */
#define _DEFAULT_SOURCE /* clock_gettime, mkdtemp under -std=c99 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <caterva.h>
/* caterva.h and b2nd.h both define `struct chunk_cache_s`; rename b2nd's. */
#define chunk_cache_s b2nd_chunk_cache_s
#include <b2nd.h>
#undef chunk_cache_s

#define CHUNK 256 /* items per chunk (and per block) */
#define ITEMSIZE 8
#define NTHREADS 2

static void die(const char *what, const char *file, int line, long rc) {
    fprintf(stderr, "growth: %s failed (rc %ld) at %s:%d\n", what, rc, file, line);
    const char *msg = caterva_last_error();
    if (msg != NULL && *msg) fprintf(stderr, "growth: last error: %s\n", msg);
    exit(1);
}
#define CHECK(call)                                                                                \
    do {                                                                                           \
        long rc_ = (long) (call);                                                                  \
        if (rc_ < 0) die(#call, __FILE__, __LINE__, rc_);                                          \
    } while (0)
#define CHECK_PTR(p)                                                                               \
    do {                                                                                           \
        if ((p) == NULL) die(#p " is NULL", __FILE__, __LINE__, 0);                                \
    } while (0)

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

enum { MEM, FILE_, DIR_, NSTORAGES };
static const char *const storage_name[NSTORAGES] = {"memory", "frame file", "sparse dir"};
enum { RESIZE, RESIZE_SUMS, ZEROS, B2ND, NCOLS };
static const char *const col_name[NCOLS] = {"resize", "resize+xxh3", "zeros", "b2nd_resize"};

static caterva_ctx_t *ctx_plain, *ctx_sums;
static blosc2_cparams b2_cparams;
static blosc2_dparams b2_dparams;
static char tmpdir[256];
static int64_t first[CHUNK];

static const char *path_of(int st) {
    static char p[NSTORAGES][300];
    if (st == MEM) return NULL;
    snprintf(p[st], sizeof p[st], "%s/g.%s", tmpdir, st == FILE_ ? "b2frame" : "b2sparse");
    return p[st];
}

static void remove_path(int st) {
    if (st == MEM) return;
    /* caterva_remove removes a frame file or a sparse directory (and what its journal left). */
    CHECK(caterva_remove(ctx_plain, (char *) path_of(st)));
}

static void cat_storage(int st, caterva_storage_t *s) {
    memset(s, 0, sizeof *s);
    s->chunkshape[0] = CHUNK;
    s->blockshape[0] = CHUNK;
    s->contiguous = st != DIR_;
    s->urlpath = (char *) path_of(st);
}

static caterva_params_t params_of(int64_t n) {
    caterva_params_t p;
    memset(&p, 0, sizeof p);
    p.itemsize = ITEMSIZE;
    p.ndim = 1;
    p.shape[0] = n;
    return p;
}

/* The array after growing to `nchunks` chunks: first chunk, an item of the last, shape. */
static void check_grown(caterva_ctx_t *ctx, caterva_array_t *a, int64_t nchunks) {
    int64_t n = nchunks * CHUNK;
    if (a->shape[0] != n) die("shape after resize", __FILE__, __LINE__, a->shape[0]);
    int64_t buf[CHUNK];
    int64_t start = 0, stop = CHUNK, bshape = CHUNK;
    CHECK(caterva_get_slice_buffer(ctx, a, &start, &stop, buf, &bshape, sizeof buf));
    if (memcmp(buf, first, sizeof buf) != 0) die("first chunk after resize", __FILE__, __LINE__, 0);
    if (nchunks > 1) {
        start = n - 3, stop = n, bshape = 3;
        buf[0] = buf[1] = buf[2] = -1;
        CHECK(caterva_get_slice_buffer(ctx, a, &start, &stop, buf, &bshape, 3 * ITEMSIZE));
        if (buf[0] != 0 || buf[1] != 0 || buf[2] != 0) die("new items after resize", __FILE__, __LINE__, buf[0]);
    }
}

/* One timed operation on storage `st`, growing by k chunks; milliseconds. */
static double run_once(int col, int st, int64_t k) {
    int64_t final = (k + 1) * CHUNK;
    double t0, t1;
    remove_path(st);
    if (col == RESIZE || col == RESIZE_SUMS) {
        caterva_ctx_t *ctx = col == RESIZE ? ctx_plain : ctx_sums;
        caterva_params_t p = params_of(CHUNK);
        caterva_storage_t s;
        cat_storage(st, &s);
        caterva_array_t *a = NULL;
        CHECK(caterva_from_buffer(ctx, first, sizeof first, &p, &s, &a));
        int64_t shape[1] = {final};
        t0 = now_ms();
        CHECK(caterva_resize(ctx, a, shape, NULL));
        t1 = now_ms();
        check_grown(ctx, a, k + 1);
        CHECK(caterva_free(ctx, &a));
        if (st != MEM) {
            CHECK(caterva_open(ctx, path_of(st), &a));
            check_grown(ctx, a, k + 1);
            CHECK(caterva_free(ctx, &a));
        }
    } else if (col == ZEROS) {
        caterva_params_t p = params_of(final);
        caterva_storage_t s;
        cat_storage(st, &s);
        caterva_array_t *a = NULL;
        t0 = now_ms();
        CHECK(caterva_zeros(ctx_plain, &p, &s, &a));
        t1 = now_ms();
        CHECK(caterva_free(ctx_plain, &a));
    } else {
        blosc2_storage b2s = BLOSC2_STORAGE_DEFAULTS;
        b2s.contiguous = st != DIR_;
        b2s.urlpath = (char *) path_of(st);
        b2s.cparams = &b2_cparams;
        b2s.dparams = &b2_dparams;
        int64_t shape[1] = {CHUNK};
        int32_t cs[1] = {CHUNK}, bs[1] = {CHUNK};
        b2nd_context_t *bctx = b2nd_create_ctx(&b2s, 1, shape, cs, bs, "<i8", DTYPE_NUMPY_FORMAT, NULL, 0);
        CHECK_PTR(bctx);
        b2nd_array_t *b = NULL;
        CHECK(b2nd_from_cbuffer(bctx, &b, first, sizeof first));
        int64_t nshape[1] = {final};
        t0 = now_ms();
        CHECK(b2nd_resize(b, nshape, NULL));
        t1 = now_ms();
        if (b->shape[0] != final) die("b2nd shape after resize", __FILE__, __LINE__, b->shape[0]);
        CHECK(b2nd_free(b));
        CHECK(b2nd_free_ctx(bctx));
    }
    remove_path(st);
    return t1 - t0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

static void fmt_ms(char *out, size_t n, double ms) {
    if (ms < 10) snprintf(out, n, "%.2f", ms);
    else if (ms < 1000) snprintf(out, n, "%.1f", ms);
    else snprintf(out, n, "%.0f", ms);
}

int main(int argc, char **argv) {
    bool quick = false, reps_set = false;
    int reps_small = 5, reps_big = 3;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) quick = true;
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            reps_small = reps_big = atoi(argv[++i]);
            reps_set = true;
        }
        else {
            fprintf(stderr, "usage: %s [--quick] [--reps N]\n", argv[0]);
            return 2;
        }
    }
    if (reps_small < 1) reps_small = reps_big = 1;
    int64_t ks[] = {1, 10, 100, 1000, 10000, 100000, 1000000};
    int nks = quick ? 5 : 7;
    double limit_ms = quick ? 100 : 2000;
    if (quick && !reps_set) reps_small = reps_big = 3;

    blosc2_init();
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    cfg.compcodec = BLOSC_ZSTD;
    cfg.complevel = 5;
    cfg.nthreads = NTHREADS;
    CHECK(caterva_ctx_new(&cfg, &ctx_plain));
    CHECK(caterva_ctx_new(&cfg, &ctx_sums));
    CHECK(caterva_ctx_set_checksums(ctx_sums, true));
    b2_cparams = BLOSC2_CPARAMS_DEFAULTS;
    b2_cparams.compcode = BLOSC_ZSTD;
    b2_cparams.clevel = 5;
    b2_cparams.typesize = ITEMSIZE;
    b2_cparams.nthreads = NTHREADS;
    b2_dparams = BLOSC2_DPARAMS_DEFAULTS;
    b2_dparams.nthreads = NTHREADS;
    for (int i = 0; i < CHUNK; i++) first[i] = i + 1;

    const char *base = getenv("GROWTH_TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/caterva-growth-XXXXXX", base ? base : "target/bench");
    if (mkdtemp(tmpdir) == NULL) die("mkdtemp", __FILE__, __LINE__, 0);

    const char *sync = getenv("CATERVA_JOURNAL_SYNC");
    const char *commit = getenv("BENCH_GIT_COMMIT");
    time_t t = time(NULL);
    char date[64];
    strftime(date, sizeof date, "%Y-%m-%d %H:%M", localtime(&t));
    printf("# Growth: resize by K chunks%s\n\n", quick ? " (--quick)" : "");
    printf("- date: %s; commit: %s; c-blosc2 %s; %ld cores online\n", date, commit ? commit : "unknown",
           BLOSC2_VERSION_STRING, sysconf(_SC_NPROCESSORS_ONLN));
    printf("- 1-d int64, chunks = blocks = %d items (%d bytes), ZSTD 5 + shuffle, %d threads; starts as one "
           "chunk of data, grows at the end by K chunks of zeros\n",
           CHUNK, CHUNK * ITEMSIZE, NTHREADS);
    printf("- CATERVA_JOURNAL_SYNC=%s; files in %s\n", sync ? sync : "(unset: syncs on)", tmpdir);
    printf("- cells: median (max) ms over %d repetitions (%d above 10k chunks); \"skipped\": the previous K "
           "took over %.1f s\n\n",
           reps_small, reps_big, limit_ms / 1e3);
    printf("| storage | K |");
    for (int c = 0; c < NCOLS; c++) printf(" %s |", col_name[c]);
    printf(" resize µs/chunk |\n|---|---:|");
    for (int c = 0; c < NCOLS; c++) printf("---:|");
    printf("---:|\n");
    fflush(stdout);

    /* Warm up (untimed): the libraries' first calls start thread pools and fault pages in. */
    for (int c = 0; c < NCOLS; c++) run_once(c, MEM, 10);

    for (int st = 0; st < NSTORAGES; st++) {
        bool skip[NCOLS] = {false};
        for (int ki = 0; ki < nks; ki++) {
            int64_t k = ks[ki];
            int reps = k > 10000 ? reps_big : reps_small;
            char cells[NCOLS][80];
            double per_chunk = -1;
            for (int c = 0; c < NCOLS; c++) {
                if (skip[c]) {
                    snprintf(cells[c], sizeof cells[c], "skipped");
                    continue;
                }
                double *ms = malloc(sizeof(double) * (size_t) reps);
                CHECK_PTR(ms);
                fprintf(stderr, "growth: %s, K = %lld, %s ...", storage_name[st], (long long) k, col_name[c]);
                for (int r = 0; r < reps; r++) ms[r] = run_once(c, st, k);
                qsort(ms, (size_t) reps, sizeof *ms, cmp_double);
                double med = reps % 2 ? ms[reps / 2] : (ms[reps / 2 - 1] + ms[reps / 2]) / 2;
                fprintf(stderr, " %.1f ms\n", med);
                char a[32], b[32];
                fmt_ms(a, sizeof a, med);
                fmt_ms(b, sizeof b, ms[reps - 1]);
                snprintf(cells[c], sizeof cells[c], "%s (%s)", a, b);
                if (c == RESIZE) per_chunk = med * 1e3 / (double) k;
                if (med > limit_ms) skip[c] = true;
                free(ms);
            }
            printf("| %s | %lld |", storage_name[st], (long long) k);
            for (int c = 0; c < NCOLS; c++) printf(" %s |", cells[c]);
            if (per_chunk >= 0) printf(" %.2f |\n", per_chunk);
            else printf(" – |\n");
            fflush(stdout);
        }
    }
    rmdir(tmpdir);
    CHECK(caterva_ctx_free(&ctx_plain));
    CHECK(caterva_ctx_free(&ctx_sums));
    blosc2_destroy();
    return 0;
}
