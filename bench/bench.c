/*
 * bench/bench.c: caterva-rs (libcaterva.so) against c-blosc2's b2nd, on the
 * same data, with the same settings, in the same run.
 *
 * Workload: a 3-D array of 8-byte items, shape {300, 745, 400}, chunks
 * {50, 150, 100}, blocks {13, 21, 30}, ZSTD level 5 with shuffle, 2 threads,
 * in memory, contiguous frame (both libraries). Two datasets: the int64
 * sequence 0..n, and a smooth float64 field sin(x/37)*cos(y/53) + z/400.
 * For each dataset and each library it measures:
 *   1. from_buffer of the whole array (caterva_from_buffer / b2nd_from_cbuffer);
 *   2. to_buffer of the whole array (caterva_to_buffer / b2nd_to_cbuffer);
 *   3. the floor: blosc2_decompress_ctx (2 threads) over every chunk of the
 *      b2nd array's super-chunk, into one chunk-size buffer;
 *   4. one plane along each axis, at the middle index (get_slice into a buffer);
 *   5. 300 reads of 16x16x16 boxes at fixed-seed random positions (total);
 *   6. overwriting the plane [k, :, :] (set_slice from a buffer), on the same
 *      array each repetition, alternating two sets of new values;
 *   7. appending slabs of one chunk row (50) along axis 0: both libraries start
 *      from an array holding the first slab (made untimed; c-blosc2 2.15's
 *      b2nd_append fails on an array of length 0) and append the other five;
 *   8. a plane [k, :, :] read from arrays of 100 and 1000 planes along axis 0
 *      (cross-section {149, 80}, same partitions), to show the read does not
 *      grow with the length of the array;
 *   9. the extra peak memory of a plane read, ours only (see mem_child()).
 * Every timed operation runs N times (--reps, default 5), alternating which
 * library goes first, and the table gives medians; the slowest ones
 * (from_buffer and append, seconds each on the float data) run M times
 * (--slow-reps, default min(3, N)). The table says how many. Every read is checked, on
 * every repetition, against the other library's result and against the
 * generator; a mismatch aborts the run. Nothing about timings is asserted.
 *
 * Run: bash bench/run.sh [--quick] [--reps N]
 *   --quick: shape {60, 149, 80}, chunks {10, 30, 20}, blocks {3, 4, 6} (the
 *            full partitions divided by 5) and scaling arrays {100|1000, 30, 16};
 *            a smoke run of a few seconds.
 *   --reps N: repetitions per operation (default 5).
 *   --slow-reps M: repetitions of from_buffer and append (default min(3, N)).
 *   --threads N: threads for both libraries (default 2).
 * run.sh builds the library (cargo build --release) and this file, passes
 * the git commit in BENCH_GIT_COMMIT, and saves what this prints on stdout
 * (the report: machine, date, versions, tables) in target/bench/results.md
 * (results-quick.md with --quick).
 */
#define _DEFAULT_SOURCE /* clock_gettime, popen, readlink, mkstemp under -std=c99 */

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <caterva.h>
/* caterva.h and b2nd.h both define `struct chunk_cache_s` (the same unused
 * layout-compatibility field); rename b2nd's so both fit in one file. */
#define chunk_cache_s b2nd_chunk_cache_s
#include <b2nd.h>
#undef chunk_cache_s

#define NDIM 3
#define ITEMSIZE 8
/* Threads for both libraries: --threads N (default 2), passed to --mem-child through BENCH_THREADS. */
static int NTHREADS = 2;
#define NRANDOM 300 /* random box reads per repetition */
#define BOX 16      /* side of a random box */
#define SEED 0x5eedcafef00dULL

enum { OURS, B2ND, NLIBS };
enum { DS_SEQ, DS_FIELD, NDATASETS };
static const char *const ds_name[NDATASETS] = {"int64 0..n", "float64 field"};
static const char *const ds_dtype[NDATASETS] = {"<i8", "<f8"};

/* ---------------------------------------------------------------- errors */

static void die(const char *what, const char *file, int line, long rc) {
    fprintf(stderr, "bench: %s failed (rc %ld) at %s:%d\n", what, rc, file, line);
    exit(1);
}

/* Both libraries return 0 on success (caterva a positive code, b2nd a negative one otherwise). */
#define CHECK(call)                                                                                \
    do {                                                                                           \
        long rc_ = (long) (call);                                                                  \
        if (rc_ != 0) die(#call, __FILE__, __LINE__, rc_);                                         \
    } while (0)
#define CHECK_PTR(p)                                                                               \
    do {                                                                                           \
        if ((p) == NULL) die(#p " != NULL", __FILE__, __LINE__, 0);                                \
    } while (0)

static void *xmalloc(size_t n) {
    void *p = malloc(n > 0 ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "bench: out of memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

/* ---------------------------------------------------------------- setup */

typedef struct {
    int64_t shape[NDIM];
    int32_t chunk[NDIM];
    int32_t block[NDIM];
    int64_t cross[2]; /* axes 1 and 2 of the scaling arrays */
    int reps;
    int slow_reps; /* from_buffer and append */
    bool quick;
} setup_t;

static setup_t S = {
    {300, 745, 400}, {50, 150, 100}, {13, 21, 30}, {149, 80}, 5, 3, false,
};
static const setup_t QUICK = {
    {60, 149, 80}, {10, 30, 20}, {3, 4, 6}, {30, 16}, 5, 3, true,
};

/* ---------------------------------------------------------------- data */

/* sin(x/37) and cos(y/53), tabulated so that filling and checking compute
 * bit-identical values cheaply. */
#define TABLE 1024
static double sin_x[TABLE], cos_y[TABLE];

static void init_tables(void) {
    for (int i = 0; i < TABLE; i++) {
        sin_x[i] = sin(i / 37.0);
        cos_y[i] = cos(i / 53.0);
    }
}

/* The 8 bytes of item (i, j, k) of dataset `ds` for an array of `shape`. */
static inline uint64_t item_bits(int ds, const int64_t *shape, int64_t i, int64_t j, int64_t k) {
    if (ds == DS_SEQ) return (uint64_t) ((i * shape[1] + j) * shape[2] + k);
    double v = sin_x[i] * cos_y[j] + (double) k / 400.0;
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

static int64_t region_items(const int64_t *start, const int64_t *stop) {
    int64_t n = 1;
    for (int d = 0; d < NDIM; d++) n *= stop[d] - start[d];
    return n;
}

/* Write the C-order box [start, stop) of the dataset into buf. */
static void fill_region(int ds, const int64_t *shape, const int64_t *start, const int64_t *stop,
                        uint64_t *buf) {
    for (int64_t i = start[0]; i < stop[0]; i++)
        for (int64_t j = start[1]; j < stop[1]; j++)
            for (int64_t k = start[2]; k < stop[2]; k++) *buf++ = item_bits(ds, shape, i, j, k);
}

/* Abort unless buf holds the C-order box [start, stop) of the dataset. */
static void check_region(int ds, const int64_t *shape, const int64_t *start, const int64_t *stop,
                         const uint64_t *buf, const char *what) {
    for (int64_t i = start[0]; i < stop[0]; i++)
        for (int64_t j = start[1]; j < stop[1]; j++)
            for (int64_t k = start[2]; k < stop[2]; k++) {
                uint64_t want = item_bits(ds, shape, i, j, k);
                if (*buf != want) {
                    fprintf(stderr, "bench: %s: item (%lld, %lld, %lld) is %#llx, expected %#llx\n",
                            what, (long long) i, (long long) j, (long long) k,
                            (unsigned long long) *buf, (unsigned long long) want);
                    exit(1);
                }
                buf++;
            }
}

static void check_same(const void *a, const void *b, int64_t nbytes, const char *what) {
    if (memcmp(a, b, (size_t) nbytes) != 0) {
        fprintf(stderr, "bench: %s: caterva-rs and b2nd (or the expected data) differ\n", what);
        exit(1);
    }
}

/* The region of one plane: index k along `axis`, everything along the others. */
static void plane_region(const int64_t *shape, int axis, int64_t k, int64_t *start, int64_t *stop) {
    for (int d = 0; d < NDIM; d++) {
        start[d] = d == axis ? k : 0;
        stop[d] = d == axis ? k + 1 : shape[d];
    }
}

/* ---------------------------------------------------------------- libraries */

static caterva_config_t cat_cfg;
static caterva_ctx_t *cat_ctx;
static blosc2_cparams b2_cparams;
static blosc2_dparams b2_dparams;
static blosc2_storage b2_storage;

static void libs_init(void) {
    blosc2_init();
    cat_cfg = CATERVA_CONFIG_DEFAULTS;
    cat_cfg.compcodec = BLOSC_ZSTD;
    cat_cfg.complevel = 5;
    cat_cfg.filters[BLOSC2_MAX_FILTERS - 1] = BLOSC_SHUFFLE;
    cat_cfg.nthreads = NTHREADS;
    CHECK(caterva_ctx_new(&cat_cfg, &cat_ctx));

    /* The same compression parameters for b2nd (b2nd sets the block size itself). */
    b2_cparams = BLOSC2_CPARAMS_DEFAULTS;
    b2_cparams.compcode = BLOSC_ZSTD;
    b2_cparams.clevel = 5;
    b2_cparams.typesize = ITEMSIZE;
    b2_cparams.nthreads = NTHREADS;
    b2_cparams.splitmode = cat_cfg.splitmode;
    memset(b2_cparams.filters, 0, sizeof b2_cparams.filters);
    b2_cparams.filters[BLOSC2_MAX_FILTERS - 1] = BLOSC_SHUFFLE;
    b2_dparams = BLOSC2_DPARAMS_DEFAULTS;
    b2_dparams.nthreads = NTHREADS;
    b2_storage = BLOSC2_STORAGE_DEFAULTS;
    b2_storage.contiguous = true;
    b2_storage.urlpath = NULL;
    b2_storage.cparams = &b2_cparams;
    b2_storage.dparams = &b2_dparams;
}

static void libs_free(void) {
    CHECK(caterva_ctx_free(&cat_ctx));
    blosc2_destroy();
}

/* One array, held by both libraries, with its source data. */
typedef struct {
    int ds;
    int64_t shape[NDIM];
    int64_t nbytes;
    uint64_t *src; /* the dataset in C order */
    caterva_params_t params;
    caterva_storage_t storage;
    b2nd_context_t *b2ctx;
    caterva_array_t *cat;
    b2nd_array_t *b2;
} arrays_t;

static void arrays_init(arrays_t *a, int ds, const int64_t *shape) {
    memset(a, 0, sizeof *a);
    a->ds = ds;
    memcpy(a->shape, shape, sizeof a->shape);
    a->nbytes = region_items((const int64_t[]){0, 0, 0}, shape) * ITEMSIZE;
    a->src = xmalloc((size_t) a->nbytes);
    fill_region(ds, shape, (const int64_t[]){0, 0, 0}, shape, a->src);
    a->params.itemsize = ITEMSIZE;
    a->params.ndim = NDIM;
    memcpy(a->params.shape, shape, sizeof a->shape);
    a->storage.contiguous = true;
    a->storage.urlpath = NULL;
    memcpy(a->storage.chunkshape, S.chunk, sizeof S.chunk);
    memcpy(a->storage.blockshape, S.block, sizeof S.block);
    a->b2ctx = b2nd_create_ctx(&b2_storage, NDIM, shape, S.chunk, S.block, ds_dtype[ds],
                               DTYPE_NUMPY_FORMAT, NULL, 0);
    CHECK_PTR(a->b2ctx);
}

static void arrays_free_lib(arrays_t *a, int lib) {
    if (lib == OURS && a->cat != NULL) CHECK(caterva_free(cat_ctx, &a->cat));
    if (lib == B2ND && a->b2 != NULL) {
        CHECK(b2nd_free(a->b2));
        a->b2 = NULL;
    }
}

static void create_lib(arrays_t *a, int lib) {
    if (lib == OURS)
        CHECK(caterva_from_buffer(cat_ctx, a->src, a->nbytes, &a->params, &a->storage, &a->cat));
    else
        CHECK(b2nd_from_cbuffer(a->b2ctx, &a->b2, a->src, a->nbytes));
}

static void arrays_free(arrays_t *a) {
    arrays_free_lib(a, OURS);
    arrays_free_lib(a, B2ND);
    CHECK(b2nd_free_ctx(a->b2ctx));
    free(a->src);
}

static void get_slice(arrays_t *a, int lib, const int64_t *start, const int64_t *stop, void *buf,
                      const int64_t *bshape, int64_t bytes) {
    if (lib == OURS)
        CHECK(caterva_get_slice_buffer(cat_ctx, a->cat, (int64_t *) start, (int64_t *) stop, buf,
                                       (int64_t *) bshape, bytes));
    else
        CHECK(b2nd_get_slice_cbuffer(a->b2, start, stop, buf, bshape, bytes));
}

/* ---------------------------------------------------------------- timing */

/* An operation: `run` is timed; `prep` and `check` (untimed, may be NULL) go
 * before and after it; `both` (untimed, may be NULL) after each repetition,
 * once every library has run. */
typedef struct {
    void (*prep)(void *st, int lib, int rep);
    void (*run)(void *st, int lib);
    void (*check)(void *st, int lib, int rep);
    void (*both)(void *st);
} op_t;

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *) x, b = *(const double *) y;
    return (a > b) - (a < b);
}

static double median(double *t, int n) {
    qsort(t, (size_t) n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

/* Run `op` `reps` times for each of the first `nlibs` libraries (the first
 * going first on even repetitions, the second on odd ones), and store the
 * median milliseconds per library in med. */
static void measure(const op_t *op, void *st, int nlibs, int reps, double med[NLIBS]) {
    double *t[NLIBS];
    for (int l = 0; l < nlibs; l++) t[l] = xmalloc(sizeof(double) * (size_t) reps);
    for (int rep = 0; rep < reps; rep++) {
        for (int o = 0; o < nlibs; o++) {
            int lib = rep % 2 ? nlibs - 1 - o : o;
            if (op->prep) op->prep(st, lib, rep);
            double t0 = now_ms();
            op->run(st, lib);
            t[lib][rep] = now_ms() - t0;
            if (op->check) op->check(st, lib, rep);
        }
        if (op->both) op->both(st);
    }
    for (int l = 0; l < nlibs; l++) {
        med[l] = median(t[l], reps);
        free(t[l]);
    }
}

/* ---------------------------------------------------------------- results */

typedef struct {
    char op[80];
    const char *data;
    double ms[NLIBS]; /* medians; ms[B2ND] is NAN when b2nd has no counterpart */
    double bytes;     /* bytes for the GB/s columns, 0 where they make no sense */
    char note[48];    /* shown instead of the ratio when set */
    int reps;
} row_t;

#define MAXROWS 64
static row_t rows[MAXROWS];
static int nrows;

static row_t *add_row(const char *op, const char *data, const double ms[NLIBS], double bytes, int reps) {
    if (nrows == MAXROWS) {
        fprintf(stderr, "bench: too many rows\n");
        exit(1);
    }
    row_t *r = &rows[nrows++];
    memset(r, 0, sizeof *r);
    snprintf(r->op, sizeof r->op, "%s", op);
    r->data = data;
    r->ms[OURS] = ms[OURS];
    r->ms[B2ND] = ms[B2ND];
    r->bytes = bytes;
    r->reps = reps;
    fprintf(stderr, "  %-44s %-14s ours %9.2f ms   b2nd %9.2f ms\n", op, data, ms[OURS], ms[B2ND]);
    return r;
}

static void print_gbs(double bytes, double ms) {
    if (bytes > 0 && !isnan(ms))
        printf(" %.2f |", bytes / (ms * 1e6));
    else
        printf(" — |");
}

static void print_table(void) {
    printf("| operation | data | caterva-rs (ms) | b2nd (ms) | b2nd / ours | caterva-rs GB/s | b2nd GB/s | reps |\n");
    printf("|---|---|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < nrows; i++) {
        const row_t *r = &rows[i];
        printf("| %s | %s | %.2f |", r->op, r->data, r->ms[OURS]);
        if (isnan(r->ms[B2ND]))
            printf(" — |");
        else
            printf(" %.2f |", r->ms[B2ND]);
        if (r->note[0])
            printf(" %s |", r->note);
        else if (isnan(r->ms[B2ND]))
            printf(" — |");
        else
            printf(" %.2f× |", r->ms[B2ND] / r->ms[OURS]);
        print_gbs(r->bytes, r->ms[OURS]);
        print_gbs(r->bytes, r->ms[B2ND]);
        printf(" %d |\n", r->reps);
    }
}

/* ---------------------------------------------------------------- 1. from_buffer */

static void fb_prep(void *st, int lib, int rep) {
    (void) rep;
    arrays_free_lib(st, lib); /* the array of the previous repetition */
}

static void fb_run(void *st, int lib) {
    create_lib(st, lib);
}

/* ---------------------------------------------------------------- 2. to_buffer */

typedef struct {
    arrays_t *a;
    uint64_t *out;
} whole_t;

static void tb_prep(void *st, int lib, int rep) {
    whole_t *w = st;
    (void) lib;
    (void) rep;
    memset(w->out, 0xa5, (size_t) w->a->nbytes); /* poison: a read that writes nothing fails */
}

static void tb_run(void *st, int lib) {
    whole_t *w = st;
    if (lib == OURS)
        CHECK(caterva_to_buffer(cat_ctx, w->a->cat, w->out, w->a->nbytes));
    else
        CHECK(b2nd_to_cbuffer(w->a->b2, w->out, w->a->nbytes));
}

/* Each library's output equals the source, hence each other's. */
static void tb_check(void *st, int lib, int rep) {
    whole_t *w = st;
    (void) rep;
    check_same(w->out, w->a->src, w->a->nbytes, lib == OURS ? "to_buffer (caterva-rs)" : "to_buffer (b2nd)");
}

/* ---------------------------------------------------------------- 3. decompression floor */

typedef struct {
    blosc2_schunk *sc;
    blosc2_context *dctx;
    uint8_t *dest;
    int64_t nbytes; /* decompressed by the last run */
} floor_t;

static void floor_run(void *st, int lib) {
    floor_t *f = st;
    (void) lib;
    f->nbytes = 0;
    for (int64_t n = 0; n < f->sc->nchunks; n++) {
        uint8_t *chunk;
        bool needs_free;
        int cbytes = blosc2_schunk_get_chunk(f->sc, n, &chunk, &needs_free);
        if (cbytes < 0) die("blosc2_schunk_get_chunk", __FILE__, __LINE__, cbytes);
        int nb = blosc2_decompress_ctx(f->dctx, chunk, cbytes, f->dest, f->sc->chunksize);
        if (nb < 0) die("blosc2_decompress_ctx", __FILE__, __LINE__, nb);
        f->nbytes += nb;
        if (needs_free) free(chunk);
    }
}

/* ---------------------------------------------------------------- 4, 8. region reads */

typedef struct {
    arrays_t *a;
    int64_t start[NDIM], stop[NDIM], bshape[NDIM];
    int64_t bytes;
    uint64_t *out[NLIBS];
    const char *what;
} slice_t;

static void slice_init(slice_t *s, arrays_t *a, const int64_t *start, const int64_t *stop, const char *what) {
    s->a = a;
    memcpy(s->start, start, sizeof s->start);
    memcpy(s->stop, stop, sizeof s->stop);
    for (int d = 0; d < NDIM; d++) s->bshape[d] = stop[d] - start[d];
    s->bytes = region_items(start, stop) * ITEMSIZE;
    for (int l = 0; l < NLIBS; l++) s->out[l] = xmalloc((size_t) s->bytes);
    s->what = what;
}

static void slice_free(slice_t *s) {
    for (int l = 0; l < NLIBS; l++) free(s->out[l]);
}

static void slice_prep(void *st, int lib, int rep) {
    slice_t *s = st;
    (void) rep;
    memset(s->out[lib], 0xa5, (size_t) s->bytes);
}

static void slice_run(void *st, int lib) {
    slice_t *s = st;
    get_slice(s->a, lib, s->start, s->stop, s->out[lib], s->bshape, s->bytes);
}

static void slice_check(void *st, int lib, int rep) {
    slice_t *s = st;
    (void) rep;
    check_region(s->a->ds, s->a->shape, s->start, s->stop, s->out[lib], s->what);
}

static void slice_both(void *st) {
    slice_t *s = st;
    check_same(s->out[OURS], s->out[B2ND], s->bytes, s->what);
}

static const op_t SLICE_OP = {slice_prep, slice_run, slice_check, slice_both};

/* ---------------------------------------------------------------- 5. random boxes */

typedef struct {
    arrays_t *a;
    int64_t (*pos)[NDIM]; /* start of each box */
    uint64_t *out[NLIBS]; /* NRANDOM boxes, one after the other */
} boxes_t;

#define BOX_ITEMS ((int64_t) BOX * BOX * BOX)

static void boxes_prep(void *st, int lib, int rep) {
    boxes_t *b = st;
    (void) rep;
    memset(b->out[lib], 0xa5, (size_t) (NRANDOM * BOX_ITEMS * ITEMSIZE));
}

static void boxes_run(void *st, int lib) {
    boxes_t *b = st;
    const int64_t bshape[NDIM] = {BOX, BOX, BOX};
    for (int i = 0; i < NRANDOM; i++) {
        int64_t stop[NDIM];
        for (int d = 0; d < NDIM; d++) stop[d] = b->pos[i][d] + BOX;
        get_slice(b->a, lib, b->pos[i], stop, b->out[lib] + i * BOX_ITEMS, bshape, BOX_ITEMS * ITEMSIZE);
    }
}

static void boxes_check(void *st, int lib, int rep) {
    boxes_t *b = st;
    (void) rep;
    for (int i = 0; i < NRANDOM; i++) {
        int64_t stop[NDIM];
        for (int d = 0; d < NDIM; d++) stop[d] = b->pos[i][d] + BOX;
        check_region(b->a->ds, b->a->shape, b->pos[i], stop, b->out[lib] + i * BOX_ITEMS, "random box");
    }
}

static void boxes_both(void *st) {
    boxes_t *b = st;
    check_same(b->out[OURS], b->out[B2ND], NRANDOM * BOX_ITEMS * ITEMSIZE, "random boxes");
}

/* ---------------------------------------------------------------- 6. plane overwrite */

typedef struct {
    slice_t s;            /* the plane: region, shape, read-back buffers */
    uint64_t *values[2];  /* two sets of new values, alternated by repetition */
    int last[NLIBS];      /* which set each library wrote last */
} setp_t;

static void setp_prep(void *st, int lib, int rep) {
    setp_t *p = st;
    p->last[lib] = rep % 2;
}

static void setp_run(void *st, int lib) {
    setp_t *p = st;
    slice_t *s = &p->s;
    void *v = p->values[p->last[lib]];
    if (lib == OURS)
        CHECK(caterva_set_slice_buffer(cat_ctx, v, s->bshape, s->bytes, s->start, s->stop, s->a->cat));
    else
        CHECK(b2nd_set_slice_cbuffer(v, s->bshape, s->bytes, s->start, s->stop, s->a->b2));
}

/* Read the plane back (and the next one, which must be untouched). */
static void setp_check(void *st, int lib, int rep) {
    setp_t *p = st;
    slice_t *s = &p->s;
    (void) rep;
    slice_prep(s, lib, 0);
    slice_run(s, lib);
    check_same(s->out[lib], p->values[p->last[lib]], s->bytes, "plane read back after set_slice");
    int64_t start[NDIM], stop[NDIM];
    memcpy(start, s->start, sizeof start);
    memcpy(stop, s->stop, sizeof stop);
    start[0] = (start[0] + 1) % s->a->shape[0];
    stop[0] = start[0] + 1;
    get_slice(s->a, lib, start, stop, s->out[lib], s->bshape, s->bytes);
    check_region(s->a->ds, s->a->shape, start, stop, s->out[lib], "plane next to the one set");
}

/* ---------------------------------------------------------------- 7. append */

typedef struct {
    arrays_t slab;       /* the first slab: made by from_buffer before each repetition */
    const arrays_t *full; /* the whole dataset, the source of the other slabs */
    int64_t slab_bytes;
    int nslabs;
    uint64_t *out;       /* the whole array, read back for the check */
} app_t;

static void app_prep(void *st, int lib, int rep) {
    app_t *p = st;
    (void) rep;
    arrays_free_lib(&p->slab, lib);
    create_lib(&p->slab, lib);
}

static void app_run(void *st, int lib) {
    app_t *p = st;
    for (int s = 1; s < p->nslabs; s++) {
        void *buf = (uint8_t *) p->full->src + s * p->slab_bytes;
        if (lib == OURS)
            CHECK(caterva_append(cat_ctx, p->slab.cat, buf, p->slab_bytes, 0));
        else
            CHECK(b2nd_append(p->slab.b2, buf, p->slab_bytes, 0));
    }
}

/* The shape every time; the contents (a whole to_buffer) on the first repetition. */
static void app_check(void *st, int lib, int rep) {
    app_t *p = st;
    const int64_t *shape = lib == OURS ? p->slab.cat->shape : p->slab.b2->shape;
    for (int d = 0; d < NDIM; d++)
        if (shape[d] != p->full->shape[d]) {
            fprintf(stderr, "bench: append: axis %d has length %lld, expected %lld\n", d,
                    (long long) shape[d], (long long) p->full->shape[d]);
            exit(1);
        }
    if (rep != 0) return;
    memset(p->out, 0xa5, (size_t) p->full->nbytes);
    if (lib == OURS)
        CHECK(caterva_to_buffer(cat_ctx, p->slab.cat, p->out, p->full->nbytes));
    else
        CHECK(b2nd_to_cbuffer(p->slab.b2, p->out, p->full->nbytes));
    check_same(p->out, p->full->src, p->full->nbytes, "array after the appends");
}

/* ---------------------------------------------------------------- 9. peak memory */

/*
 * What is measured: the peak resident memory a plane read adds to a process
 * that already holds the array. Each measurement is a fresh process (this
 * program re-executed with --mem-child) that loads the array (dataset 0..n)
 * from a contiguous frame written by the parent (read into memory, opened in
 * place with caterva_from_cframe), creates the context and allocates and
 * fills the output buffer; the "read" child then reads the plane and checks
 * it. Both print their VmHWM (peak RSS of this process image, from
 * /proc/self/status) and the difference is the read's extra peak: the
 * library's working memory (decompression scratch, thread-pool stacks and
 * allocator arenas), not counting the output buffer. ru_maxrss of a child is
 * not used: Linux folds into it the parent's RSS at fork time.
 */
static long vm_hwm_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    CHECK_PTR(f);
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0) kb = strtol(line + 6, NULL, 10);
    fclose(f);
    return kb;
}

static int mem_child(const char *mode, const char *path, int axis) {
    bool do_read = strcmp(mode, "read") == 0;
    FILE *f = fopen(path, "rb");
    CHECK_PTR(f);
    CHECK(fseek(f, 0, SEEK_END));
    long len = ftell(f);
    if (len <= 0) die("ftell", __FILE__, __LINE__, len);
    rewind(f);
    uint8_t *frame = xmalloc((size_t) len);
    if (fread(frame, 1, (size_t) len, f) != (size_t) len) die("fread", __FILE__, __LINE__, 0);
    fclose(f);

    libs_init();
    init_tables();
    caterva_array_t *arr;
    CHECK(caterva_from_cframe(cat_ctx, frame, len, false, &arr));
    int64_t start[NDIM], stop[NDIM], bshape[NDIM];
    plane_region(arr->shape, axis, arr->shape[axis] / 2, start, stop);
    for (int d = 0; d < NDIM; d++) bshape[d] = stop[d] - start[d];
    int64_t bytes = region_items(start, stop) * ITEMSIZE;
    uint64_t *out = xmalloc((size_t) bytes);
    memset(out, 0xa5, (size_t) bytes);
    if (do_read) {
        CHECK(caterva_get_slice_buffer(cat_ctx, arr, start, stop, out, bshape, bytes));
        check_region(DS_SEQ, arr->shape, start, stop, out, "plane read in the memory child");
    }
    printf("%ld\n", vm_hwm_kb());
    free(out);
    CHECK(caterva_free(cat_ctx, &arr));
    free(frame);
    libs_free();
    return 0;
}

/* Run this program as a memory child and return the VmHWM it reports (kB). */
static long run_mem_child(const char *exe, const char *mode, const char *path, int axis) {
    char cmd[2 * 4096 + 64];
    snprintf(cmd, sizeof cmd, "'%s' --mem-child %s '%s' %d", exe, mode, path, axis);
    FILE *p = popen(cmd, "r");
    CHECK_PTR(p);
    long kb = -1;
    if (fscanf(p, "%ld", &kb) != 1) kb = -1;
    int status = pclose(p);
    if (status != 0 || kb <= 0) {
        fprintf(stderr, "bench: memory child '%s' failed (status %d)\n", cmd, status);
        exit(1);
    }
    return kb;
}

typedef struct {
    char plane[32];
    double plane_mb, chunks_mb, base_mb, extra_mb;
} memrow_t;
static memrow_t memrows[NDIM];

static void measure_memory(const arrays_t *a) {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) die("readlink /proc/self/exe", __FILE__, __LINE__, (long) n);
    exe[n] = '\0';
    const char *tmp = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/caterva-bench-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) die("mkstemp", __FILE__, __LINE__, fd);
    FILE *f = fdopen(fd, "wb");
    CHECK_PTR(f);
    uint8_t *frame;
    int64_t len;
    bool needs_free;
    CHECK(caterva_to_cframe(cat_ctx, a->cat, &frame, &len, &needs_free));
    if (fwrite(frame, 1, (size_t) len, f) != (size_t) len) die("fwrite", __FILE__, __LINE__, 0);
    CHECK(fclose(f));
    if (needs_free) free(frame);

    static const char *const names[NDIM] = {"[k, :, :]", "[:, k, :]", "[:, :, k]"};
    double chunk_bytes = (double) a->cat->extchunknitems * ITEMSIZE; /* a decompressed (padded) chunk */
    for (int axis = 0; axis < NDIM; axis++) {
        long base = run_mem_child(exe, "baseline", path, axis);
        long read = run_mem_child(exe, "read", path, axis);
        memrow_t *m = &memrows[axis];
        snprintf(m->plane, sizeof m->plane, "%s", names[axis]);
        m->plane_mb = (double) (a->nbytes / a->shape[axis]) / 1e6;
        m->chunks_mb = NTHREADS * chunk_bytes / 1e6;
        m->base_mb = base / 1e3 * 1.024;
        m->extra_mb = (read - base) / 1e3 * 1.024;
        fprintf(stderr, "  peak memory, plane %s: baseline %ld kB, with the read %ld kB\n", names[axis], base, read);
    }
    unlink(path);
}

/* ---------------------------------------------------------------- the benchmark */

static uint64_t rng_state = SEED;
static uint64_t rng(void) { /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

typedef struct {
    double cbytes[NLIBS];
    double nbytes;
} csize_t;
static csize_t csizes[NDATASETS];

static void bench_dataset(int ds, int64_t (*pos)[NDIM]) {
    const char *dn = ds_name[ds];
    double ms[NLIBS];
    int R = S.reps;
    char name[80];
    fprintf(stderr, "dataset %s: generating %.0f MB\n", dn, (double) S.shape[0] * S.shape[1] * S.shape[2] * 8 / 1e6);
    arrays_t a;
    arrays_init(&a, ds, S.shape);

    /* 1. from_buffer; the arrays of the last repetition serve the reads below. */
    const op_t fb = {fb_prep, fb_run, NULL, NULL};
    measure(&fb, &a, NLIBS, S.slow_reps, ms);
    add_row("from_buffer (whole array)", dn, ms, (double) a.nbytes, S.slow_reps);
    csizes[ds].cbytes[OURS] = (double) a.cat->sc->cbytes;
    csizes[ds].cbytes[B2ND] = (double) a.b2->sc->cbytes;
    csizes[ds].nbytes = (double) a.nbytes;

    /* 2. to_buffer */
    whole_t w = {&a, xmalloc((size_t) a.nbytes)};
    const op_t tb = {tb_prep, tb_run, tb_check, NULL};
    measure(&tb, &w, NLIBS, R, ms);
    free(w.out);
    row_t *tbrow = add_row("to_buffer (whole array)", dn, ms, (double) a.nbytes, R);

    /* 3. the floor: decompress every chunk of b2nd's super-chunk. */
    floor_t f = {a.b2->sc, blosc2_create_dctx(b2_dparams), xmalloc((size_t) a.b2->sc->chunksize), 0};
    CHECK_PTR(f.dctx);
    const op_t fl = {NULL, floor_run, NULL, NULL};
    measure(&fl, &f, 1, R, ms);
    blosc2_free_ctx(f.dctx);
    free(f.dest);
    ms[B2ND] = NAN;
    snprintf(name, sizeof name, "floor: blosc2_decompress_ctx of all %lld chunks", (long long) a.b2->sc->nchunks);
    row_t *fr = add_row(name, dn, ms, (double) f.nbytes, R);
    snprintf(fr->note, sizeof fr->note, "to_buffer at %.0f%% (b2nd %.0f%%)", 100 * ms[OURS] / tbrow->ms[OURS],
             100 * ms[OURS] / tbrow->ms[B2ND]);

    /* 4. one plane along each axis, at the middle index */
    static const char *const planes[NDIM] = {"plane [k, :, :], k = %lld", "plane [:, k, :], k = %lld",
                                             "plane [:, :, k], k = %lld"};
    double sum[NLIBS] = {0, 0};
    for (int axis = 0; axis < NDIM; axis++) {
        int64_t start[NDIM], stop[NDIM];
        plane_region(a.shape, axis, a.shape[axis] / 2, start, stop);
        snprintf(name, sizeof name, planes[axis], (long long) start[axis]);
        slice_t s;
        slice_init(&s, &a, start, stop, name);
        measure(&SLICE_OP, &s, NLIBS, R, ms);
        slice_free(&s);
        add_row(name, dn, ms, 0, R);
        for (int l = 0; l < NLIBS; l++) sum[l] += ms[l];
    }
    add_row("planes, sum of the three axes", dn, sum, 0, R);

    /* 5. random boxes */
    boxes_t b = {&a, pos, {xmalloc(NRANDOM * BOX_ITEMS * ITEMSIZE), xmalloc(NRANDOM * BOX_ITEMS * ITEMSIZE)}};
    const op_t bo = {boxes_prep, boxes_run, boxes_check, boxes_both};
    measure(&bo, &b, NLIBS, R, ms);
    free(b.out[OURS]);
    free(b.out[B2ND]);
    snprintf(name, sizeof name, "%d random %dx%dx%d reads (total)", NRANDOM, BOX, BOX, BOX);
    add_row(name, dn, ms, 0, R);

    /* 6. overwrite the plane [k, :, :] (changes the arrays: last) */
    {
        setp_t p;
        int64_t start[NDIM], stop[NDIM];
        plane_region(a.shape, 0, a.shape[0] / 2, start, stop);
        slice_init(&p.s, &a, start, stop, "set plane");
        int64_t n = p.s.bytes / ITEMSIZE;
        for (int v = 0; v < 2; v++) {
            p.values[v] = xmalloc((size_t) p.s.bytes);
            fill_region(ds, a.shape, start, stop, p.values[v]);
            for (int64_t i = 0; i < n; i++) { /* new values: -x, then 2x */
                if (ds == DS_SEQ) {
                    int64_t x = (int64_t) p.values[v][i];
                    p.values[v][i] = (uint64_t) (v == 0 ? -x : 2 * x);
                } else {
                    double x;
                    memcpy(&x, &p.values[v][i], sizeof x);
                    x = v == 0 ? -x : 2 * x;
                    memcpy(&p.values[v][i], &x, sizeof x);
                }
            }
        }
        const op_t so = {setp_prep, setp_run, setp_check, NULL};
        measure(&so, &p, NLIBS, R, ms);
        snprintf(name, sizeof name, "set plane [k, :, :], k = %lld", (long long) start[0]);
        add_row(name, dn, ms, 0, R);
        free(p.values[0]);
        free(p.values[1]);
        slice_free(&p.s);
    }
    arrays_free_lib(&a, OURS);
    arrays_free_lib(&a, B2ND);

    /* 7. append slabs of one chunk row along axis 0 */
    {
        app_t p;
        int64_t slab_shape[NDIM] = {S.chunk[0], S.shape[1], S.shape[2]};
        /* The first slab of the dataset: the same values as the whole array's first rows. */
        arrays_init(&p.slab, ds, slab_shape);
        p.full = &a;
        p.slab_bytes = p.slab.nbytes;
        p.nslabs = (int) (S.shape[0] / S.chunk[0]);
        p.out = xmalloc((size_t) a.nbytes);
        const op_t ap = {app_prep, app_run, app_check, NULL};
        measure(&ap, &p, NLIBS, S.slow_reps, ms);
        snprintf(name, sizeof name, "append %d slabs of %d along axis 0 (total)", p.nslabs - 1, (int) S.chunk[0]);
        add_row(name, dn, ms, (double) (p.nslabs - 1) * (double) p.slab_bytes, S.slow_reps);
        free(p.out);
        arrays_free(&p.slab);
    }
    arrays_free(&a);
}

/* 8. plane [k, :, :] of arrays of 100 and 1000 planes along axis 0 */
static void bench_scaling(int ds) {
    static const int64_t lens[2] = {100, 1000};
    double ms[NLIBS];
    for (int i = 0; i < 2; i++) {
        int64_t shape[NDIM] = {lens[i], S.cross[0], S.cross[1]};
        arrays_t a;
        arrays_init(&a, ds, shape);
        create_lib(&a, OURS);
        create_lib(&a, B2ND);
        int64_t start[NDIM], stop[NDIM];
        plane_region(shape, 0, shape[0] / 2, start, stop);
        char name[80];
        snprintf(name, sizeof name, "plane [%lld, :, :] of {%lld, %lld, %lld}", (long long) start[0],
                 (long long) shape[0], (long long) shape[1], (long long) shape[2]);
        slice_t s;
        slice_init(&s, &a, start, stop, name);
        measure(&SLICE_OP, &s, NLIBS, S.reps, ms);
        slice_free(&s);
        add_row(name, ds_name[ds], ms, 0, S.reps);
        arrays_free(&a);
    }
}

static void print_machine(void) {
    char model[256] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f))
            if (strncmp(line, "model name", 10) == 0) {
                char *c = strchr(line, ':');
                if (c) {
                    c += 1 + strspn(c + 1, " \t");
                    c[strcspn(c, "\n")] = '\0';
                    snprintf(model, sizeof model, "%s", c);
                }
                break;
            }
        fclose(f);
    }
    const char *commit = getenv("BENCH_GIT_COMMIT");
    char date[32] = "unknown";
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm)) strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", &tm);
    printf("# caterva-rs vs c-blosc2 b2nd\n\n");
    printf("- date: %s\n", date);
    printf("- CPU: %s, %ld online cores (nproc)\n", model, sysconf(_SC_NPROCESSORS_ONLN));
    printf("- c-blosc2: %s; caterva-rs commit: %s\n", blosc2_get_version_string(), commit ? commit : "unknown");
    printf("- shape {%lld, %lld, %lld}, chunks {%d, %d, %d}, blocks {%d, %d, %d}, 8-byte items%s\n",
           (long long) S.shape[0], (long long) S.shape[1], (long long) S.shape[2], S.chunk[0], S.chunk[1],
           S.chunk[2], S.block[0], S.block[1], S.block[2], S.quick ? " (--quick)" : "");
    printf("- ZSTD level 5 + shuffle, %d threads, in memory, contiguous frame; median of %d repetitions "
           "(from_buffer and append: %d)\n\n",
           NTHREADS, S.reps, S.slow_reps);
}

static void usage(const char *argv0) {
    fprintf(stderr, "usage: %s [--quick] [--reps N] [--slow-reps M] [--threads N]\n", argv0);
    exit(2);
}

int main(int argc, char **argv) {
    if (getenv("BENCH_THREADS") != NULL && atoi(getenv("BENCH_THREADS")) > 0) NTHREADS = atoi(getenv("BENCH_THREADS"));
    if (argc == 5 && strcmp(argv[1], "--mem-child") == 0) return mem_child(argv[2], argv[3], atoi(argv[4]));
    int reps = S.reps, slow_reps = 0; /* 0: min(3, reps) */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            S = QUICK;
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            reps = atoi(argv[++i]);
            if (reps < 1) usage(argv[0]);
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            NTHREADS = atoi(argv[++i]);
            if (NTHREADS < 1) usage(argv[0]);
            setenv("BENCH_THREADS", argv[i], 1);
        } else if (strcmp(argv[i], "--slow-reps") == 0 && i + 1 < argc) {
            slow_reps = atoi(argv[++i]);
            if (slow_reps < 1) usage(argv[0]);
        } else
            usage(argv[0]);
    }
    S.reps = reps;
    S.slow_reps = slow_reps ? slow_reps : (reps < 3 ? reps : 3);
    setvbuf(stdout, NULL, _IOLBF, 0);
    double t0 = now_ms();
    init_tables();
    libs_init();
    print_machine();

    /* The same box positions for every dataset and library. */
    int64_t (*pos)[NDIM] = xmalloc(sizeof(*pos) * NRANDOM);
    for (int i = 0; i < NRANDOM; i++)
        for (int d = 0; d < NDIM; d++) pos[i][d] = (int64_t) (rng() % (uint64_t) (S.shape[d] - BOX + 1));

    for (int ds = 0; ds < NDATASETS; ds++) bench_dataset(ds, pos);
    free(pos);
    fprintf(stderr, "plane reads from arrays of 100 and 1000 planes\n");
    for (int ds = 0; ds < NDATASETS; ds++) bench_scaling(ds);
    fprintf(stderr, "peak memory of plane reads\n");
    {
        arrays_t a;
        arrays_init(&a, DS_SEQ, S.shape);
        create_lib(&a, OURS);
        measure_memory(&a);
        arrays_free(&a);
    }

    print_table();
    printf("\nb2nd / ours > 1: caterva-rs is faster. GB/s: uncompressed bytes per second (for the floor: the "
           "bytes decompressed, chunk padding included), 1 GB = 1e9 bytes. \"to_buffer at X%%\": floor time / "
           "to_buffer time (over 100%%: to_buffer beats the floor, which decompresses every block, padding "
           "included, with blosc's 2 threads inside each chunk).\n");
    printf("Compressed sizes (from_buffer):");
    for (int ds = 0; ds < NDATASETS; ds++)
        printf(" %s: caterva-rs %.1f MB, b2nd %.1f MB (ratio %.1f×, %.1f×)%s", ds_name[ds],
               csizes[ds].cbytes[OURS] / 1e6, csizes[ds].cbytes[B2ND] / 1e6,
               csizes[ds].nbytes / csizes[ds].cbytes[OURS], csizes[ds].nbytes / csizes[ds].cbytes[B2ND],
               ds + 1 < NDATASETS ? ";" : ".\n");

    printf("\nExtra peak memory of a plane read (caterva-rs, dataset int64 0..n, fresh process each; "
           "extra = VmHWM with the read - VmHWM without it, output buffer excluded):\n\n");
    printf("| plane | plane size (MB) | %d threads × padded chunk (MB) | baseline VmHWM (MB) | extra peak (MB) |\n",
           NTHREADS);
    printf("|---|---:|---:|---:|---:|\n");
    for (int axis = 0; axis < NDIM; axis++)
        printf("| %s | %.2f | %.2f | %.1f | %.2f |\n", memrows[axis].plane, memrows[axis].plane_mb,
               memrows[axis].chunks_mb, memrows[axis].base_mb, memrows[axis].extra_mb);

    libs_free();
    printf("\nTotal run time: %.0f s\n", (now_ms() - t0) / 1e3);
    return 0;
}
