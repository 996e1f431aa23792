/*
 * bench/compare/native.c: the C driver of the cross-library benchmark
 * (bench/compare/README.md). It times, on an array stored on disk, the same
 * operations that bench/compare/pylibs.py times for the Python libraries, and
 * prints one JSON object per line (the raw times of every repetition; the
 * orchestrator, run.py, takes the medians and writes the table).
 *
 * Built twice by bench/compare/run.sh:
 *   native-caterva  (-DWITH_CATERVA, linked with libcaterva.so and the
 *                    c-blosc2 2.15 beside it): --lib caterva-frame,
 *                    caterva-frame-sums (with checksums), caterva-sparse
 *                    or b2nd (c-blosc2 2.15's b2nd);
 *   native-b2nd3    (linked with the libblosc2.so of the python-blosc2 wheel,
 *                    c-blosc2 3.x): --lib b2nd.
 * Both libraries export the same symbols, hence two programs.
 *
 * Usage: native --lib L --data FILE --dtype i8|f8 --shape A,B,C --chunks A,B,C
 *               --blocks A,B,C --threads N --reps R --write-reps W
 *               --positions FILE --box S --path PATH [--cold] [--keep]
 * FILE holds the dataset (C order, little endian); PATH is where the array
 * goes (a file, or a directory for caterva-sparse) and is removed at the end
 * unless --keep is given (to profile reads of it afterwards).
 * Every read is checked against FILE's contents; a wrong result or an error
 * makes the operation a failure ({"op": ..., "fail": "why"}), not a time.
 */
#define _DEFAULT_SOURCE /* clock_gettime, nftw, sync under -std=c99 */
#define _XOPEN_SOURCE 700

#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef WITH_CATERVA
#include <caterva.h>
/* caterva.h and b2nd.h both define `struct chunk_cache_s`; rename b2nd's. */
#define chunk_cache_s b2nd_chunk_cache_s
#endif
#include <b2nd.h>
#ifdef WITH_CATERVA
#undef chunk_cache_s
#endif

#define NDIM 3
#define MAXPOS 100000
#define NPENCIL_MAX 1000

/* ---------------------------------------------------------------- options */

enum { CAT_FRAME, CAT_SPARSE, B2ND };
/* caterva-frame-sums: a frame file with per-chunk checksums (caterva_ctx_set_checksums). */
static bool checksums;
/* caterva-frame-nosync, and every caterva column outside --defaults: arrays
 * created without syncing (caterva_ctx_set_durability(PROCESS)), as every
 * other library here writes; the library's default (FULL) syncs a new array
 * before renaming it into place. */
static bool nosync;
/* caterva-frame-tuned (--defaults): the compression and partitions caterva_tune
 * chooses from the dataset (objective balanced), as the Python package does. */
static bool tuned;
static int lib = -1;
static const char *data_path, *dtype = "i8", *pos_path, *arr_path;
static int64_t shape[NDIM];
static int32_t chunks[NDIM], blocks[NDIM];
static int nthreads = 2, reps = 5, write_reps = 3, box = 16;
static bool cold, keep;
/* Bytes per item: the digits of --dtype (numpy's kind and size: i8, f4, u2...). */
static int itemsize = 8;
/* Codec, level and filter (--codec, --clevel, --filter); --defaults: the
 * library's own defaults instead, and for caterva-rs its own partitions. */
static const char *codec_name = "zstd", *filter_name = "shuffle";
static int codec = BLOSC_ZSTD, clevel = 5, filter = BLOSC_SHUFFLE;
static bool defaults;

static uint8_t *src; /* the dataset, C order */
static int64_t nitems, nbytes;
static int64_t (*boxes)[NDIM], (*items)[NDIM];
static int nboxes, nitems_pos;
/* Pencils along each axis: the two fixed coordinates (the other axes, in order). */
static int64_t pencils[NDIM][NPENCIL_MAX][2];
static int npencils[NDIM];

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "native: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static void *xmalloc(size_t n) {
    void *p = malloc(n > 0 ? n : 1);
    if (p == NULL) die("out of memory (%zu bytes)", n);
    return p;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

static void parse3_64(const char *s, int64_t *v) {
    long long a, b, c;
    if (sscanf(s, "%lld,%lld,%lld", &a, &b, &c) != 3) die("bad triple '%s'", s);
    v[0] = a, v[1] = b, v[2] = c;
}

static void parse3_32(const char *s, int32_t *v) {
    int64_t w[NDIM];
    parse3_64(s, w);
    for (int d = 0; d < NDIM; d++) v[d] = (int32_t) w[d];
}

/* ---------------------------------------------------------------- output */

/* The times of one operation: {"op": "name", "ms": [t1, t2, ...]} */
static void emit_times(const char *op, const double *t, int n) {
    printf("{\"op\": \"%s\", \"ms\": [", op);
    for (int i = 0; i < n; i++) printf("%s%.6f", i ? ", " : "", t[i]);
    printf("]}\n");
    fflush(stdout);
}

static void emit_fail(const char *op, const char *why) {
    printf("{\"op\": \"%s\", \"fail\": \"", op);
    for (const char *c = why; *c; c++) {
        if (*c == '"' || *c == '\\') putchar('\\');
        putchar(*c == '\n' ? ' ' : *c);
    }
    printf("\"}\n");
    fflush(stdout);
}

static void emit_value(const char *key, const char *value) {
    printf("{\"%s\": \"%s\"}\n", key, value);
    fflush(stdout);
}

/* ---------------------------------------------------------------- files */

static int64_t tree_bytes;
static int add_size(const char *p, const struct stat *st, int flag, struct FTW *f) {
    (void) p, (void) f;
    if (flag == FTW_F) tree_bytes += st->st_size;
    return 0;
}

/* Bytes of the regular files at path (a file or a directory tree). */
static int64_t path_bytes(const char *path) {
    tree_bytes = 0;
    if (nftw(path, add_size, 16, FTW_PHYS) != 0) return -1;
    return tree_bytes;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
    (void) st, (void) f;
    return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static void rm_rf(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) return;
    if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0) die("cannot remove %s", path);
}

/* Empty the page cache (root only); false where not permitted. */
static bool drop_caches(void) {
    sync();
    int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
    if (fd < 0) return false;
    bool ok = write(fd, "3\n", 2) == 2;
    close(fd);
    return ok;
}

static void load_source(void) {
    nitems = shape[0] * shape[1] * shape[2];
    nbytes = nitems * itemsize;
    FILE *f = fopen(data_path, "rb");
    if (f == NULL) die("cannot open %s", data_path);
    src = xmalloc((size_t) nbytes);
    if (fread(src, 1, (size_t) nbytes, f) != (size_t) nbytes) die("%s is shorter than the shape says", data_path);
    fclose(f);
}

static void load_positions(void) {
    FILE *f = fopen(pos_path, "r");
    if (f == NULL) die("cannot open %s", pos_path);
    boxes = xmalloc(sizeof *boxes * MAXPOS);
    items = xmalloc(sizeof *items * MAXPOS);
    char kind[16];
    long long p[NDIM];
    while (fscanf(f, "%15s %lld %lld %lld", kind, &p[0], &p[1], &p[2]) == 4) {
        if (strcmp(kind, "pencil") == 0) { /* pencil AXIS a b */
            if (p[0] < 0 || p[0] >= NDIM || npencils[p[0]] >= NPENCIL_MAX) die("bad pencil line");
            pencils[p[0]][npencils[p[0]]][0] = p[1];
            pencils[p[0]][npencils[p[0]]++][1] = p[2];
            continue;
        }
        int64_t (*dst)[NDIM] = strcmp(kind, "box") == 0 ? &boxes[nboxes++] : &items[nitems_pos++];
        if (nboxes > MAXPOS || nitems_pos > MAXPOS) die("too many positions");
        for (int d = 0; d < NDIM; d++) (*dst)[d] = p[d];
    }
    fclose(f);
}

/* ---------------------------------------------------------------- the libraries */

typedef struct {
#ifdef WITH_CATERVA
    caterva_array_t *cat;
#endif
    b2nd_array_t *b2;
} arr_t;

#ifdef WITH_CATERVA
static caterva_ctx_t *cat_ctx;
#endif
static blosc2_cparams cparams;
static blosc2_dparams dparams;

static char errbuf[512];

#ifdef WITH_CATERVA
static void cat_params(caterva_params_t *p, caterva_storage_t *s);

/*
 * ================================================================
 * caterva-rs's defaults (--defaults): what caterva-rs does untuned.
 * THE ONE PLACE that says it: the configuration (codec, level, filters,
 * split mode) and the chunk and block shapes for an array of `p`, with only
 * the thread count set. Fills `cfg`, and `s->chunkshape` / `s->blockshape`.
 * (caterva_propose_config and caterva_propose_partitions: the library's own proposal.)
 * ================================================================
 */
static int cat_default_settings(caterva_params_t *p, caterva_config_t *cfg, caterva_storage_t *s) {
    *cfg = CATERVA_CONFIG_DEFAULTS;
    if (tuned) {
        char *report = NULL;
        int rc = caterva_tune(src, nbytes, p, CATERVA_TUNE_BALANCED, nthreads, cfg, s, &report);
        if (rc != 0) return rc;
        fprintf(stderr, "native: tuning: %s\n", report);
        free(report);
        cfg->nthreads = (int16_t) nthreads;
        return 0;
    }
    int rc = caterva_propose_config(cfg); /* the library's proposal: what Python and the CLI use */
    if (rc != 0) return rc;
    cfg->nthreads = (int16_t) nthreads;
    return caterva_propose_partitions(p, CATERVA_ACCESS_BALANCED, 0, 0, 0, nthreads, s);
}
#endif

static const char *codec_str(int c) {
    switch (c) {
    case BLOSC_BLOSCLZ: return "blosclz";
    case BLOSC_LZ4: return "lz4";
    case BLOSC_LZ4HC: return "lz4hc";
    case BLOSC_ZLIB: return "zlib";
    case BLOSC_ZSTD: return "zstd";
    default: return "other";
    }
}

static const char *filter_str(int f) {
    switch (f) {
    case BLOSC_NOFILTER: return "nofilter";
    case BLOSC_SHUFFLE: return "shuffle";
    case BLOSC_BITSHUFFLE: return "bitshuffle";
    case BLOSC_DELTA: return "delta";
    case BLOSC_TRUNC_PREC: return "trunc_prec";
    default: return "other";
    }
}

/* {"settings": {...}}: the effective chunks, blocks, codec, level and filters. */
static void emit_settings(const int32_t *ch, const int32_t *bl, int ccode, int level, const uint8_t *filters,
                          int split) {
    printf("{\"settings\": {\"chunks\": [%d, %d, %d], \"blocks\": [%d, %d, %d], \"codec\": \"%s\", "
           "\"clevel\": %d, \"filters\": [", ch[0], ch[1], ch[2], bl[0], bl[1], bl[2], codec_str(ccode), level);
    bool first = true;
    for (int i = 0; i < BLOSC2_MAX_FILTERS; i++)
        if (filters[i] != BLOSC_NOFILTER) printf("%s\"%s\"", first ? "" : ", ", filter_str(filters[i])), first = false;
    printf("], \"splitmode\": %d, \"nthreads\": %d}}\n", split, nthreads);
    fflush(stdout);
}

static void libs_init(void) {
    blosc2_init();
#ifdef WITH_CATERVA
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    if (defaults && lib != B2ND) {
        caterva_params_t p;
        caterva_storage_t s;
        cat_params(&p, &s);
        int rc = cat_default_settings(&p, &cfg, &s);
        if (rc != 0) die("cat_default_settings: error %d", rc);
        memcpy(chunks, s.chunkshape, sizeof chunks);
        memcpy(blocks, s.blockshape, sizeof blocks);
    } else if (!defaults) {
        cfg.compcodec = (uint8_t) codec;
        cfg.complevel = (uint8_t) clevel;
        memset(cfg.filters, 0, sizeof cfg.filters);
        cfg.filters[BLOSC2_MAX_FILTERS - 1] = (uint8_t) filter;
        cfg.nthreads = (int16_t) nthreads;
    }
    if (caterva_ctx_new(&cfg, &cat_ctx) != 0) die("caterva_ctx_new failed");
    if (checksums && caterva_ctx_set_checksums(cat_ctx, true) != 0) die("caterva_ctx_set_checksums failed");
    if ((nosync || !defaults) && caterva_ctx_set_durability(cat_ctx, CATERVA_DURABILITY_PROCESS) != 0)
        die("caterva_ctx_set_durability failed");
#endif
    cparams = BLOSC2_CPARAMS_DEFAULTS;
    cparams.typesize = itemsize;
    cparams.nthreads = (int16_t) nthreads;
    if (!defaults) {
        cparams.compcode = (uint8_t) codec;
        cparams.clevel = (uint8_t) clevel;
        cparams.splitmode = BLOSC_AUTO_SPLIT; /* caterva's default, python-blosc2's too */
        memset(cparams.filters, 0, sizeof cparams.filters);
        cparams.filters[BLOSC2_MAX_FILTERS - 1] = (uint8_t) filter;
    }
    dparams = BLOSC2_DPARAMS_DEFAULTS;
    dparams.nthreads = (int16_t) nthreads;
}

#ifdef WITH_CATERVA
static void cat_params(caterva_params_t *p, caterva_storage_t *s) {
    memset(p, 0, sizeof *p);
    memset(s, 0, sizeof *s);
    p->itemsize = (uint8_t) itemsize;
    p->ndim = NDIM;
    memcpy(p->shape, shape, sizeof shape);
    memcpy(s->chunkshape, chunks, sizeof chunks);
    memcpy(s->blockshape, blocks, sizeof blocks);
    s->contiguous = lib == CAT_FRAME;
    s->urlpath = (char *) arr_path;
}
#endif

static b2nd_context_t *b2_ctx(const char *path) {
    static blosc2_storage st;
    st = (blosc2_storage) BLOSC2_STORAGE_DEFAULTS;
    st.contiguous = true;
    st.urlpath = (char *) path;
    st.cparams = &cparams;
    st.dparams = &dparams;
    char dt[8];
    snprintf(dt, sizeof dt, "<%s", dtype);
    return b2nd_create_ctx(&st, NDIM, shape, chunks, blocks, dt, DTYPE_NUMPY_FORMAT, NULL, 0);
}

/* Create the array at `path` from `buf` (zeros when buf is NULL) and close it. */
static int lib_create(const char *path, const void *buf) {
    rm_rf(path);
#ifdef WITH_CATERVA
    if (lib != B2ND) {
        caterva_params_t p;
        caterva_storage_t s;
        cat_params(&p, &s);
        s.urlpath = (char *) path;
        caterva_array_t *a = NULL;
        int rc = buf ? caterva_from_buffer(cat_ctx, (void *) buf, nbytes, &p, &s, &a)
                     : caterva_zeros(cat_ctx, &p, &s, &a);
        if (rc != 0) {
            snprintf(errbuf, sizeof errbuf, "caterva_%s: error %d", buf ? "from_buffer" : "zeros", rc);
            return -1;
        }
        return caterva_free(cat_ctx, &a);
    }
#endif
    b2nd_context_t *ctx = b2_ctx(path);
    if (ctx == NULL) {
        snprintf(errbuf, sizeof errbuf, "b2nd_create_ctx failed");
        return -1;
    }
    b2nd_array_t *a = NULL;
    int rc = buf ? b2nd_from_cbuffer(ctx, &a, buf, nbytes) : b2nd_zeros(ctx, &a);
    b2nd_free_ctx(ctx);
    if (rc < 0) {
        snprintf(errbuf, sizeof errbuf, "b2nd_%s: error %d", buf ? "from_cbuffer" : "zeros", rc);
        return -1;
    }
    return b2nd_free(a) < 0 ? -1 : 0;
}

static int lib_open(const char *path, arr_t *a) {
    memset(a, 0, sizeof *a);
#ifdef WITH_CATERVA
    if (lib != B2ND) {
        int rc = caterva_open(cat_ctx, path, &a->cat);
        if (rc != 0) snprintf(errbuf, sizeof errbuf, "caterva_open: error %d", rc);
        return rc;
    }
#endif
    int rc = b2nd_open(path, &a->b2);
    if (rc < 0) {
        snprintf(errbuf, sizeof errbuf, "b2nd_open: error %d", rc);
        return rc;
    }
    /* b2nd_open decompresses with blosc2's default dparams (1 thread): give the
     * array a context with `nthreads`, as python-blosc2 does when it opens one. */
    blosc2_dparams dp = dparams;
    dp.schunk = a->b2->sc;
    blosc2_free_ctx(a->b2->sc->dctx);
    a->b2->sc->dctx = blosc2_create_dctx(dp);
    if (a->b2->sc->dctx == NULL) {
        snprintf(errbuf, sizeof errbuf, "blosc2_create_dctx failed");
        return -1;
    }
    return 0;
}

/* The settings of an opened array, as the library reports them (read back
 * from the stored array, not the parameters it was given). */
static void emit_stored_settings(arr_t *a) {
#ifdef WITH_CATERVA
    if (a->cat != NULL) {
        blosc2_schunk *sc = a->cat->sc;
        if (sc != NULL)
            emit_settings(a->cat->chunkshape, a->cat->blockshape, sc->compcode, sc->clevel, sc->filters,
                          sc->splitmode);
        else
            emit_settings(a->cat->chunkshape, a->cat->blockshape, a->cat->cfg->compcodec, a->cat->cfg->complevel,
                          a->cat->cfg->filters, a->cat->cfg->splitmode);
        return;
    }
#endif
    blosc2_schunk *sc = a->b2->sc;
    emit_settings(a->b2->chunkshape, a->b2->blockshape, sc->compcode, sc->clevel, sc->filters, sc->splitmode);
}

static void lib_close(arr_t *a) {
#ifdef WITH_CATERVA
    if (a->cat != NULL) caterva_free(cat_ctx, &a->cat);
#endif
    if (a->b2 != NULL) b2nd_free(a->b2);
    a->b2 = NULL;
}

static int lib_read(arr_t *a, const int64_t *start, const int64_t *stop, void *buf, int64_t bytes) {
    int64_t bshape[NDIM];
    for (int d = 0; d < NDIM; d++) bshape[d] = stop[d] - start[d];
#ifdef WITH_CATERVA
    if (a->cat != NULL) {
        int rc = caterva_get_slice_buffer(cat_ctx, a->cat, (int64_t *) start, (int64_t *) stop, buf, bshape, bytes);
        if (rc != 0) snprintf(errbuf, sizeof errbuf, "caterva_get_slice_buffer: error %d", rc);
        return rc;
    }
#endif
    int rc = b2nd_get_slice_cbuffer(a->b2, start, stop, buf, bshape, bytes);
    if (rc < 0) snprintf(errbuf, sizeof errbuf, "b2nd_get_slice_cbuffer: error %d", rc);
    return rc;
}

static int lib_read_all(arr_t *a, void *buf) {
#ifdef WITH_CATERVA
    if (a->cat != NULL) {
        int rc = caterva_to_buffer(cat_ctx, a->cat, buf, nbytes);
        if (rc != 0) snprintf(errbuf, sizeof errbuf, "caterva_to_buffer: error %d", rc);
        return rc;
    }
#endif
    int rc = b2nd_to_cbuffer(a->b2, buf, nbytes);
    if (rc < 0) snprintf(errbuf, sizeof errbuf, "b2nd_to_cbuffer: error %d", rc);
    return rc;
}

/* ---------------------------------------------------------------- checks */

/* True when buf holds the C-order box [start, stop) of the source (of zeros if `zeros`). */
static bool region_ok(const int64_t *start, const int64_t *stop, const uint8_t *buf, bool zeros) {
    int64_t row = (stop[2] - start[2]) * itemsize;
    static uint8_t *zero_row;
    if (zeros && zero_row == NULL) zero_row = calloc(1, (size_t) (shape[2] * itemsize));
    for (int64_t i = start[0]; i < stop[0]; i++)
        for (int64_t j = start[1]; j < stop[1]; j++) {
            const uint8_t *want = zeros ? zero_row : src + ((i * shape[1] + j) * shape[2] + start[2]) * itemsize;
            if (memcmp(buf, want, (size_t) row) != 0) {
                snprintf(errbuf, sizeof errbuf, "wrong values in row (%lld, %lld) of [%lld:%lld, %lld:%lld, %lld:%lld]",
                         (long long) i, (long long) j, (long long) start[0], (long long) stop[0],
                         (long long) start[1], (long long) stop[1], (long long) start[2], (long long) stop[2]);
                return false;
            }
            buf += row;
        }
    return true;
}

/* ---------------------------------------------------------------- operations */

/* A read operation on an open array: one call of `run` reads what `check` checks. */
typedef struct {
    const char *name;
    int64_t start[NDIM], stop[NDIM]; /* a region read (kind 0) */
    int kind;                        /* 0: region, 1: whole array, 2: the boxes */
    uint8_t *buf;
    int64_t bytes;
} readop_t;

static int run_read(arr_t *a, readop_t *r) {
    if (r->kind == 1) return lib_read_all(a, r->buf);
    if (r->kind == 0) return lib_read(a, r->start, r->stop, r->buf, r->bytes);
    int64_t boxbytes = (int64_t) box * box * box * itemsize;
    for (int i = 0; i < nboxes; i++) {
        int64_t stop[NDIM];
        for (int d = 0; d < NDIM; d++) stop[d] = boxes[i][d] + box;
        if (lib_read(a, boxes[i], stop, r->buf + i * boxbytes, boxbytes) != 0) return -1;
    }
    return 0;
}

static bool check_read(readop_t *r) {
    if (r->kind == 1) {
        if (memcmp(r->buf, src, (size_t) nbytes) != 0) {
            snprintf(errbuf, sizeof errbuf, "the whole array read differs from the source");
            return false;
        }
        return true;
    }
    if (r->kind == 0) return region_ok(r->start, r->stop, r->buf, false);
    int64_t boxbytes = (int64_t) box * box * box * itemsize;
    for (int i = 0; i < nboxes; i++) {
        int64_t stop[NDIM];
        for (int d = 0; d < NDIM; d++) stop[d] = boxes[i][d] + box;
        if (!region_ok(boxes[i], stop, r->buf + i * boxbytes, false)) return false;
    }
    return true;
}

static void poison(readop_t *r) { memset(r->buf, 0xa5, (size_t) r->bytes); }

/* Warm: on the open array, one untimed checked run, then `reps` timed ones,
 * each checked. Cold (a != NULL ignored): each repetition drops the page
 * cache and opens the array (untimed) first. */
static void time_read(arr_t *a, readop_t *r, bool is_cold) {
    double *t = xmalloc(sizeof(double) * (size_t) reps);
    char name[64];
    snprintf(name, sizeof name, "%s%s", r->name, is_cold ? "_cold" : "");
    for (int rep = is_cold ? 0 : -1; rep < reps; rep++) {
        arr_t fresh;
        arr_t *use = a;
        if (is_cold) {
            drop_caches();
            if (lib_open(arr_path, &fresh) != 0) {
                emit_fail(name, errbuf);
                free(t);
                return;
            }
            use = &fresh;
        }
        poison(r);
        double t0 = now_ms();
        int rc = run_read(use, r);
        double t1 = now_ms();
        if (is_cold) lib_close(&fresh);
        if (rc != 0 || !check_read(r)) {
            emit_fail(name, errbuf);
            free(t);
            return;
        }
        if (rep >= 0) t[rep] = t1 - t0;
    }
    emit_times(name, t, reps);
    free(t);
}

/* 1-item reads at every item position, each call timed (warm), or, cold,
 * one read per repetition after dropping the cache and opening the array. */
static void time_items(arr_t *a, const char *path, const char *name, bool zeros, bool is_cold) {
    int n = is_cold ? reps : nitems_pos;
    double *t = xmalloc(sizeof(double) * (size_t) n);
    for (int i = 0; i < n; i++) {
        int64_t stop[NDIM];
        const int64_t *start = items[i % nitems_pos];
        for (int d = 0; d < NDIM; d++) stop[d] = start[d] + 1;
        uint8_t v[16];
        memset(v, 0xa5, sizeof v);
        arr_t fresh;
        arr_t *use = a;
        if (is_cold) {
            drop_caches();
            if (lib_open(path, &fresh) != 0) {
                emit_fail(name, errbuf);
                free(t);
                return;
            }
            use = &fresh;
        }
        double t0 = now_ms();
        int rc = lib_read(use, start, stop, v, itemsize);
        t[i] = now_ms() - t0;
        if (is_cold) lib_close(&fresh);
        if (rc != 0 || !region_ok(start, stop, v, zeros)) {
            emit_fail(name, errbuf);
            free(t);
            return;
        }
    }
    emit_times(name, t, n);
    free(t);
}

/* Pencils along `axis` (the whole axis, one item thick across the others) at
 * every pencil position, each call timed, with no untimed warm-up: the first
 * call is the first such read of the process. The reads are checked after
 * all of them are timed. */
static void time_pencils(arr_t *a, int axis) {
    static const char *const names[NDIM] = {"pencil0", "pencil1", "pencil2"};
    int n = npencils[axis];
    if (n == 0) return;
    int64_t len = shape[axis], bytes = len * itemsize;
    uint8_t *buf = xmalloc((size_t) (bytes * n));
    memset(buf, 0xa5, (size_t) (bytes * n));
    double *t = xmalloc(sizeof(double) * (size_t) n);
    int64_t start[NPENCIL_MAX][NDIM], stop[NPENCIL_MAX][NDIM];
    for (int i = 0; i < n; i++) {
        int o = 0;
        for (int d = 0; d < NDIM; d++) {
            start[i][d] = d == axis ? 0 : pencils[axis][i][o++];
            stop[i][d] = d == axis ? len : start[i][d] + 1;
        }
    }
    for (int i = 0; i < n; i++) {
        double t0 = now_ms();
        int rc = lib_read(a, start[i], stop[i], buf + i * bytes, bytes);
        t[i] = now_ms() - t0;
        if (rc != 0) {
            emit_fail(names[axis], errbuf);
            goto out;
        }
    }
    for (int i = 0; i < n; i++)
        if (!region_ok(start[i], stop[i], buf + i * bytes, false)) {
            emit_fail(names[axis], errbuf);
            goto out;
        }
    emit_times(names[axis], t, n);
out:
    free(t);
    free(buf);
}

static void time_open(const char *name, bool is_cold) {
    double *t = xmalloc(sizeof(double) * (size_t) reps);
    for (int rep = 0; rep < reps; rep++) {
        if (is_cold) drop_caches();
        arr_t a;
        double t0 = now_ms();
        int rc = lib_open(arr_path, &a);
        t[rep] = now_ms() - t0;
        if (rc != 0) {
            emit_fail(name, errbuf);
            free(t);
            return;
        }
        lib_close(&a);
    }
    emit_times(name, t, reps);
    free(t);
}

static void usage(void) {
    die("usage: native --lib caterva-frame|caterva-frame-sums|caterva-frame-nosync|caterva-frame-tuned|caterva-sparse|b2nd --data FILE --dtype i8|f4|u2... "
        "--shape A,B,C --chunks A,B,C --blocks A,B,C --threads N --reps R --write-reps W --positions FILE --box S "
        "--path PATH [--codec lz4|blosclz|zstd|lz4hc] [--clevel N] [--filter shuffle|bitshuffle|none] "
        "[--defaults] [--cold] [--keep]");
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(k, "--cold") == 0 || strcmp(k, "--keep") == 0) {
            *(k[2] == 'c' ? &cold : &keep) = true;
            continue;
        }
        if (strcmp(k, "--defaults") == 0) {
            defaults = true;
            continue;
        }
        if (v == NULL) usage();
        i++;
        if (strcmp(k, "--lib") == 0) {
            if (strcmp(v, "b2nd") == 0) lib = B2ND;
#ifdef WITH_CATERVA
            else if (strcmp(v, "caterva-frame") == 0) lib = CAT_FRAME;
            else if (strcmp(v, "caterva-sparse") == 0) lib = CAT_SPARSE;
            else if (strcmp(v, "caterva-frame-sums") == 0) lib = CAT_FRAME, checksums = true;
            else if (strcmp(v, "caterva-frame-nosync") == 0) lib = CAT_FRAME, nosync = true;
            else if (strcmp(v, "caterva-frame-tuned") == 0) lib = CAT_FRAME, tuned = true;
#endif
            else die("unknown library '%s' in this build", v);
        } else if (strcmp(k, "--data") == 0) data_path = v;
        else if (strcmp(k, "--dtype") == 0) dtype = v;
        else if (strcmp(k, "--codec") == 0) codec_name = v;
        else if (strcmp(k, "--clevel") == 0) clevel = atoi(v);
        else if (strcmp(k, "--filter") == 0) filter_name = v;
        else if (strcmp(k, "--shape") == 0) parse3_64(v, shape);
        else if (strcmp(k, "--chunks") == 0) parse3_32(v, chunks);
        else if (strcmp(k, "--blocks") == 0) parse3_32(v, blocks);
        else if (strcmp(k, "--threads") == 0) nthreads = atoi(v);
        else if (strcmp(k, "--reps") == 0) reps = atoi(v);
        else if (strcmp(k, "--write-reps") == 0) write_reps = atoi(v);
        else if (strcmp(k, "--positions") == 0) pos_path = v;
        else if (strcmp(k, "--box") == 0) box = atoi(v);
        else if (strcmp(k, "--path") == 0) arr_path = v;
        else usage();
    }
    if (lib < 0 || !data_path || !pos_path || !arr_path || reps < 1 || write_reps < 1 || nthreads < 1) usage();
    if (strchr("iuf", dtype[0]) == NULL || (itemsize = atoi(dtype + 1)) < 1 || itemsize > 8)
        die("unsupported dtype '%s' (numpy's: i8, f4, u2...)", dtype);
    static const char *const cnames[] = {"blosclz", "lz4", "lz4hc", "zstd"};
    static const int ccodes[] = {BLOSC_BLOSCLZ, BLOSC_LZ4, BLOSC_LZ4HC, BLOSC_ZSTD};
    codec = -1;
    for (int i = 0; i < 4; i++)
        if (strcmp(codec_name, cnames[i]) == 0) codec = ccodes[i];
    if (codec < 0) die("unknown codec '%s'", codec_name);
    if (strcmp(filter_name, "shuffle") == 0) filter = BLOSC_SHUFFLE;
    else if (strcmp(filter_name, "bitshuffle") == 0) filter = BLOSC_BITSHUFFLE;
    else if (strcmp(filter_name, "none") == 0) filter = BLOSC_NOFILTER;
    else die("unknown filter '%s'", filter_name);
    if (clevel < 0 || clevel > 9) die("clevel %d outside 0..9", clevel);
    load_source();
    load_positions();
    libs_init();
    emit_value("version", blosc2_get_version_string());

    /* write: from a buffer in memory to the file, closed (flushed) */
    double *t = xmalloc(sizeof(double) * (size_t) (write_reps > reps ? write_reps : reps));
    bool written = true;
    for (int rep = 0; rep < write_reps; rep++) {
        rm_rf(arr_path);
        double t0 = now_ms();
        int rc = lib_create(arr_path, src);
        t[rep] = now_ms() - t0;
        if (rc != 0) {
            emit_fail("write", errbuf);
            written = false;
            break;
        }
    }
    if (!written) return 0;
    emit_times("write", t, write_reps);
    free(t);
    printf("{\"op\": \"file_bytes\", \"value\": %lld}\n", (long long) path_bytes(arr_path));

    time_open("open", false);

    /* reads on one open array, page cache warm */
    arr_t a;
    if (lib_open(arr_path, &a) != 0) die("%s", errbuf);
    emit_stored_settings(&a);
    int64_t boxbytes = (int64_t) nboxes * box * box * box * itemsize;
    uint8_t *buf = xmalloc((size_t) (boxbytes > nbytes ? boxbytes : nbytes));
    readop_t full = {"full", {0}, {0}, 1, buf, nbytes};
    readop_t planes[NDIM];
    static const char *const pname[NDIM] = {"plane0", "plane1", "plane2"};
    for (int axis = 0; axis < NDIM; axis++) {
        readop_t *r = &planes[axis];
        memset(r, 0, sizeof *r);
        r->name = pname[axis];
        r->bytes = itemsize;
        for (int d = 0; d < NDIM; d++) {
            r->start[d] = d == axis ? shape[d] / 2 : 0;
            r->stop[d] = d == axis ? shape[d] / 2 + 1 : shape[d];
            r->bytes *= r->stop[d] - r->start[d];
        }
        r->buf = buf;
    }
    readop_t bx = {"boxes", {0}, {0}, 2, buf, boxbytes};

    /* pencils first: their first call is the first read of the opened array */
    for (int axis = 0; axis < NDIM; axis++) time_pencils(&a, axis);
    time_read(&a, &full, false);
    for (int axis = 0; axis < NDIM; axis++) time_read(&a, &planes[axis], false);
    time_read(&a, &bx, false);
    time_items(&a, arr_path, "item", false, false);
    lib_close(&a);

    if (cold) {
        if (!drop_caches()) {
            emit_value("cold", "unavailable: cannot write /proc/sys/vm/drop_caches");
        } else {
            time_open("open_cold", true);
            time_read(NULL, &full, true);
            for (int axis = 0; axis < NDIM; axis++) time_read(NULL, &planes[axis], true);
            time_read(NULL, &bx, true);
            time_items(NULL, arr_path, "item_cold", false, true);
        }
    }

    /* per-call overhead: 1-item reads from an array of zeros with the same
     * schema (c-blosc2 stores its chunks as special values: nothing to
     * decompress), page cache warm */
    char zpath[4096];
    snprintf(zpath, sizeof zpath, "%s.zeros", arr_path);
    if (lib_create(zpath, NULL) != 0) {
        emit_fail("overhead", errbuf);
    } else if (lib_open(zpath, &a) != 0) {
        emit_fail("overhead", errbuf);
    } else {
        time_items(&a, zpath, "overhead", true, false);
        lib_close(&a);
    }
    rm_rf(zpath);
    if (!keep) rm_rf(arr_path);
    free(buf);
#ifdef WITH_CATERVA
    caterva_ctx_free(&cat_ctx);
#endif
    blosc2_destroy();
    return 0;
}
