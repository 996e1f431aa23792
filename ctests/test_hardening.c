/* Hardening: every exported function, called with each kind of bad handle
 * (NULL, freed, one the caller made itself, a context whose cfg is NULL) and
 * with bad arguments (configs, params, storages and their metalayers,
 * buffer sizes and shapes, selections, metalayer codec input). Each call
 * must return its documented code, leave its outputs as they were, leave
 * the fixture array unchanged (public fields, items, metalayers, and the
 * file on disk) and write no file. Double frees are refused, and a
 * super-chunk an array owns cannot be adopted by a second array. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

/* What no call may write into an output on failure. */
static int sentinel_object;
#define SENTINEL ((void *)&sentinel_object)
#define NEW_PATH "ctest_hardening_new.b2frame"
#define NEW_DIR "ctest_hardening_new.b2nd"
/* A saved copy of the fixture, the target of caterva_remove probes. */
#define VICTIM "ctest_hardening_victim.b2frame"

/* The fixture: a 2-D array {10, 8} of 4-byte items in a frame file, with a
 * metalayer "m" and a vlmetalayer "v"; its items are h_fill_buffer's. */
typedef struct {
    caterva_ctx_t *ctx;
    caterva_array_t *arr;
    char path[64];
    uint8_t data[10 * 8 * 4];
    caterva_array_t before; /* the public fields at the start */
    uint8_t *cframe;        /* a frame of the array (malloc'ed) */
    int64_t cframe_len;
    int touched;            /* set by a probe whose failed call wrote an output */
} hd_t;

static const uint8_t META[3] = {1, 2, 3};
static const uint8_t VLMETA[2] = {4, 5};


static int hd_setup(hd_t *f) {
    memset(f, 0, sizeof(*f));
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    CHECK_OK(caterva_ctx_new(&cfg, &f->ctx));
    snprintf(f->path, sizeof(f->path), "ctest_hardening.b2frame");
    CHECK_OK(caterva_remove(f->ctx, f->path));
    CHECK_OK(caterva_remove(f->ctx, NEW_PATH));
    CHECK_OK(caterva_remove(f->ctx, NEW_DIR));
    CHECK_OK(caterva_remove(f->ctx, VICTIM));
    h_fill_buffer(f->data, 80, 4);
    caterva_params_t params;
    caterva_storage_t storage;
    h_small_params(&params, &storage, f->path, true);
    storage.metalayers[0].name = "m";
    storage.metalayers[0].sdata = (uint8_t *)META;
    storage.metalayers[0].size = 3;
    storage.nmetalayers = 1;
    CHECK_OK(caterva_from_buffer(f->ctx, f->data, (int64_t)sizeof(f->data), &params, &storage, &f->arr));
    caterva_metalayer_t v = {"v", (uint8_t *)VLMETA, 2};
    CHECK_OK(caterva_vlmeta_add(f->ctx, f->arr, &v));
    bool needs_free = false;
    uint8_t *frame = NULL;
    CHECK_OK(caterva_to_cframe(f->ctx, f->arr, &frame, &f->cframe_len, &needs_free));
    f->cframe = malloc((size_t)f->cframe_len);
    CHECK(f->cframe != NULL);
    memcpy(f->cframe, frame, (size_t)f->cframe_len);
    if (needs_free) {
        free(frame);
    }
    CHECK_OK(caterva_save(f->ctx, f->arr, VICTIM));
    f->before = *f->arr;
    return 0;
}

/* The fixture array is as it was, and nothing was written at the new paths. */
static int hd_unchanged(hd_t *f) {
    CHECK(memcmp(f->arr, &f->before, sizeof(f->before)) == 0);
    uint8_t out[sizeof(f->data)];
    CHECK_OK(caterva_to_buffer(f->ctx, f->arr, out, (int64_t)sizeof(out)));
    CHECK(memcmp(out, f->data, sizeof(out)) == 0);
    caterva_metalayer_t m = {NULL, NULL, 0};
    CHECK_OK(caterva_meta_get(f->ctx, f->arr, "m", &m));
    CHECK(m.size == 3 && memcmp(m.sdata, META, 3) == 0);
    free(m.name);
    free(m.sdata);
    CHECK_OK(caterva_vlmeta_get(f->ctx, f->arr, "v", &m));
    CHECK(m.size == 2 && memcmp(m.sdata, VLMETA, 2) == 0);
    free(m.name);
    free(m.sdata);
    CHECK(h_exists(f->path) && h_exists(VICTIM));
    CHECK(!h_exists(NEW_PATH) && !h_exists(NEW_DIR));
    return 0;
}

/* Free the fixture; the file still holds the original array. */
static int hd_end(hd_t *f) {
    if (hd_unchanged(f)) {
        return 1;
    }
    CHECK_OK(caterva_free(f->ctx, &f->arr));
    CHECK_OK(caterva_open(f->ctx, f->path, &f->arr));
    uint8_t out[sizeof(f->data)];
    CHECK_OK(caterva_to_buffer(f->ctx, f->arr, out, (int64_t)sizeof(out)));
    CHECK(memcmp(out, f->data, sizeof(out)) == 0);
    CHECK_OK(caterva_free(f->ctx, &f->arr));
    CHECK_OK(caterva_remove(f->ctx, f->path));
    CHECK_OK(caterva_remove(f->ctx, VICTIM));
    free(f->cframe);
    CHECK_OK(caterva_ctx_free(&f->ctx));
    return 0;
}

/* Expect rc from a call, untouched outputs (f->touched) and an unchanged fixture. */
#define EXPECT(f, call, rc)                                                      \
    do {                                                                         \
        (f)->touched = 0;                                                        \
        CHECK_RC(call, rc);                                                      \
        if ((f)->touched) {                                                      \
            fprintf(stderr, "    %s wrote an output on failure\n", #call);       \
            return 1;                                                            \
        }                                                                        \
        if (hd_unchanged(f)) {                                                   \
            fprintf(stderr, "    the array or the disk changed after %s\n", #call); \
            return 1;                                                            \
        }                                                                        \
    } while (0)

/* ---- Probes: each exported function with valid arguments but for ctx and
 * array, which come from the caller. A failed call must not write its
 * outputs (else f->touched is set). -------------------------------------- */

typedef int (*probe_t)(hd_t *f, caterva_ctx_t *ctx, caterva_array_t *arr);

/* A new array: on failure *out must still be the sentinel; on success it
 * is freed here. */
static int check_new(hd_t *f, int rc, caterva_array_t **out) {
    if (rc != CATERVA_SUCCEED && *out != SENTINEL) {
        f->touched = 1;
    }
    if (rc == CATERVA_SUCCEED && caterva_free(f->ctx, out) != CATERVA_SUCCEED) {
        return -1;
    }
    return rc;
}

static int ctor(hd_t *f, caterva_ctx_t *ctx, int kind) {
    caterva_params_t params;
    caterva_storage_t storage;
    h_small_params(&params, &storage, NEW_PATH, true);
    uint8_t fill[4] = {9, 9, 9, 9};
    caterva_array_t *out = SENTINEL;
    int rc;
    switch (kind) {
    case 0: rc = caterva_uninit(ctx, &params, &storage, &out); break;
    case 1: rc = caterva_empty(ctx, &params, &storage, &out); break;
    case 2: rc = caterva_zeros(ctx, &params, &storage, &out); break;
    case 3: rc = caterva_full(ctx, &params, &storage, fill, &out); break;
    default: rc = caterva_from_buffer(ctx, f->data, (int64_t)sizeof(f->data), &params, &storage, &out); break;
    }
    return check_new(f, rc, &out);
}

static int p_uninit(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) { (void)a; return ctor(f, c, 0); }
static int p_empty(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) { (void)a; return ctor(f, c, 1); }
static int p_zeros(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) { (void)a; return ctor(f, c, 2); }
static int p_full(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) { (void)a; return ctor(f, c, 3); }
static int p_from_buffer(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) { (void)a; return ctor(f, c, 4); }

static int p_from_cframe(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    (void)a;
    caterva_array_t *out = SENTINEL;
    return check_new(f, caterva_from_cframe(c, f->cframe, f->cframe_len, true, &out), &out);
}

static int p_open(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    (void)a;
    caterva_array_t *out = SENTINEL;
    return check_new(f, caterva_open(c, f->path, &out), &out);
}

static int p_from_schunk(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    (void)a;
    /* A super-chunk of our own with a valid 'caterva' metalayer (a copy of
     * the fixture's frame); on failure it stays ours. */
    blosc2_schunk *sc = blosc2_schunk_from_buffer(f->cframe, f->cframe_len, true);
    if (sc == NULL) {
        return -1;
    }
    caterva_array_t *out = SENTINEL;
    int rc = check_new(f, caterva_from_schunk(c, sc, &out), &out);
    if (rc != CATERVA_SUCCEED) {
        blosc2_schunk_free(sc);
    }
    return rc;
}

static int p_remove(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    (void)a;
    (void)f;
    char victim[] = VICTIM;
    return caterva_remove(c, victim);
}

static int p_free(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    if (a == NULL) {
        return caterva_free(c, NULL); /* freeing a NULL *array is fine; a NULL array pointer is not */
    }
    caterva_array_t *slot = a;
    int rc = caterva_free(c, &slot);
    if (rc != CATERVA_SUCCEED && slot != a) {
        f->touched = 1;
    }
    return rc;
}

static int p_to_cframe(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    uint8_t *frame = SENTINEL;
    int64_t len = -7;
    bool nf = true;
    int rc = caterva_to_cframe(c, a, &frame, &len, &nf);
    if (rc != CATERVA_SUCCEED && (frame != SENTINEL || len != -7 || !nf)) {
        f->touched = 1;
    }
    if (rc == CATERVA_SUCCEED && nf) {
        free(frame);
    }
    return rc;
}

static int p_save(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    (void)f;
    char path[] = NEW_PATH;
    return caterva_save(c, a, path);
}

/* A read into a sentinel-filled buffer: on failure it must be intact. */
static int check_buffer(hd_t *f, int rc, const uint8_t *buf, size_t n) {
    for (size_t i = 0; rc != CATERVA_SUCCEED && i < n; i++) {
        if (buf[i] != 0xD7) {
            f->touched = 1;
        }
    }
    return rc;
}

static int p_to_buffer(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    uint8_t out[10 * 8 * 4];
    memset(out, 0xD7, sizeof(out));
    return check_buffer(f, caterva_to_buffer(c, a, out, (int64_t)sizeof(out)), out, sizeof(out));
}

static int p_get_slice_buffer(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    int64_t start[2] = {1, 1}, stop[2] = {3, 4}, shape[2] = {2, 3};
    uint8_t out[2 * 3 * 4];
    memset(out, 0xD7, sizeof(out));
    int rc = caterva_get_slice_buffer(c, a, start, stop, out, shape, (int64_t)sizeof(out));
    return check_buffer(f, rc, out, sizeof(out));
}

static int p_set_slice_buffer(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    (void)f;
    int64_t start[2] = {1, 1}, stop[2] = {3, 4}, shape[2] = {2, 3};
    uint8_t in[2 * 3 * 4];
    memset(in, 0x77, sizeof(in));
    return caterva_set_slice_buffer(c, in, shape, (int64_t)sizeof(in), start, stop, a);
}

static int p_get_orthogonal(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    int64_t s0[2] = {9, 0}, s1[3] = {7, 1, 1};
    int64_t *sel[2] = {s0, s1};
    int64_t size[2] = {2, 3};
    uint8_t out[2 * 3 * 4];
    memset(out, 0xD7, sizeof(out));
    int rc = caterva_get_orthogonal_selection(c, a, sel, size, out, size, (int64_t)sizeof(out));
    return check_buffer(f, rc, out, sizeof(out));
}

static int p_set_orthogonal(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    (void)f;
    int64_t s0[2] = {9, 0}, s1[3] = {7, 1, 1};
    int64_t *sel[2] = {s0, s1};
    int64_t size[2] = {2, 3};
    uint8_t in[2 * 3 * 4];
    memset(in, 0x77, sizeof(in));
    return caterva_set_orthogonal_selection(c, a, sel, size, in, size, (int64_t)sizeof(in));
}

static int p_get_slice(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    caterva_params_t params;
    caterva_storage_t storage;
    h_small_params(&params, &storage, NEW_PATH, true);
    int64_t start[2] = {1, 1}, stop[2] = {7, 8};
    caterva_array_t *out = SENTINEL;
    return check_new(f, caterva_get_slice(c, a, start, stop, &storage, &out), &out);
}

static int p_copy(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    caterva_params_t params;
    caterva_storage_t storage;
    h_small_params(&params, &storage, NEW_PATH, true);
    caterva_array_t *out = SENTINEL;
    return check_new(f, caterva_copy(c, a, &storage, &out), &out);
}

static int p_resize(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    (void)f;
    int64_t shape[2] = {12, 8};
    return caterva_resize(c, a, shape, NULL);
}

static int p_insert(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    (void)f;
    uint8_t row[8 * 4] = {0};
    return caterva_insert(c, a, row, (int64_t)sizeof(row), 0, 3);
}

static int p_append(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    (void)f;
    uint8_t row[8 * 4] = {0};
    return caterva_append(c, a, row, (int64_t)sizeof(row), 0);
}

static int p_delete(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    (void)f;
    return caterva_delete(c, a, 0, 2, 3);
}

static int p_squeeze(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    (void)f;
    return caterva_squeeze(c, a);
}

static int p_squeeze_index(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    (void)f;
    bool index[2] = {false, false};
    return caterva_squeeze_index(c, a, index);
}

static int check_metalayer_out(hd_t *f, int rc, const caterva_metalayer_t *m) {
    if (rc != CATERVA_SUCCEED && (m->name != SENTINEL || m->sdata != SENTINEL || m->size != -3)) {
        f->touched = 1;
    }
    if (rc == CATERVA_SUCCEED) {
        free(m->name);
        free(m->sdata);
    }
    return rc;
}

static int p_vlmeta_add(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    (void)f;
    uint8_t content[2] = {7, 7};
    caterva_metalayer_t m = {"new", content, 2};
    return caterva_vlmeta_add(c, a, &m);
}

static int p_vlmeta_update(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    (void)f;
    uint8_t content[3] = {7, 7, 7};
    caterva_metalayer_t m = {"v", content, 3};
    return caterva_vlmeta_update(c, a, &m);
}

static int p_vlmeta_get(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    caterva_metalayer_t m = {SENTINEL, SENTINEL, -3};
    return check_metalayer_out(f, caterva_vlmeta_get(c, a, "v", &m), &m);
}

static int p_meta_get(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    caterva_metalayer_t m = {SENTINEL, SENTINEL, -3};
    return check_metalayer_out(f, caterva_meta_get(c, a, "m", &m), &m);
}

static int exists_probe(hd_t *f, int (*fn)(caterva_ctx_t *, caterva_array_t *, const char *, bool *),
                        caterva_ctx_t *c, caterva_array_t *a, const char *name) {
    /* The byte behind `exists` starts at 0x5A: a failed call must not write it. */
    uint8_t raw = 0x5A;
    bool *exists = (bool *)(void *)&raw;
    int rc = fn(c, a, name, exists);
    if (rc != CATERVA_SUCCEED && raw != 0x5A) {
        f->touched = 1;
    }
    return rc;
}

static int p_vlmeta_exists(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    return exists_probe(f, caterva_vlmeta_exists, c, a, "v");
}

static int p_meta_exists(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    return exists_probe(f, caterva_meta_exists, c, a, "m");
}

static int p_meta_update(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    (void)f;
    uint8_t content[3] = {7, 7, 7};
    caterva_metalayer_t m = {"m", content, 3};
    return caterva_meta_update(c, a, &m);
}

static int p_set_dtype(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    (void)f;
    return caterva_set_dtype(c, a, "<f4");
}

static int p_get_dtype(hd_t *f, caterva_ctx_t *c, caterva_array_t *a) {
    char *dtype = SENTINEL;
    int rc = caterva_get_dtype(c, a, &dtype);
    if (rc != CATERVA_SUCCEED && dtype != SENTINEL) {
        f->touched = 1;
    }
    if (rc == CATERVA_SUCCEED) {
        free(dtype);
    }
    return rc;
}

typedef struct {
    const char *name;
    probe_t probe;
    bool takes_array; /* probed with bad arrays too */
} probe_def_t;

static const probe_def_t PROBES[] = {
    {"caterva_uninit", p_uninit, false},
    {"caterva_empty", p_empty, false},
    {"caterva_zeros", p_zeros, false},
    {"caterva_full", p_full, false},
    {"caterva_from_buffer", p_from_buffer, false},
    {"caterva_from_cframe", p_from_cframe, false},
    {"caterva_open", p_open, false},
    {"caterva_from_schunk", p_from_schunk, false},
    {"caterva_remove", p_remove, false},
    {"caterva_free", p_free, true},
    {"caterva_to_cframe", p_to_cframe, true},
    {"caterva_save", p_save, true},
    {"caterva_to_buffer", p_to_buffer, true},
    {"caterva_get_slice_buffer", p_get_slice_buffer, true},
    {"caterva_set_slice_buffer", p_set_slice_buffer, true},
    {"caterva_get_orthogonal_selection", p_get_orthogonal, true},
    {"caterva_set_orthogonal_selection", p_set_orthogonal, true},
    {"caterva_get_slice", p_get_slice, true},
    {"caterva_copy", p_copy, true},
    {"caterva_resize", p_resize, true},
    {"caterva_insert", p_insert, true},
    {"caterva_append", p_append, true},
    {"caterva_delete", p_delete, true},
    {"caterva_squeeze", p_squeeze, true},
    {"caterva_squeeze_index", p_squeeze_index, true},
    {"caterva_vlmeta_add", p_vlmeta_add, true},
    {"caterva_vlmeta_update", p_vlmeta_update, true},
    {"caterva_vlmeta_get", p_vlmeta_get, true},
    {"caterva_vlmeta_exists", p_vlmeta_exists, true},
    {"caterva_meta_get", p_meta_get, true},
    {"caterva_meta_exists", p_meta_exists, true},
    {"caterva_meta_update", p_meta_update, true},
    {"caterva_set_dtype", p_set_dtype, true},
    {"caterva_get_dtype", p_get_dtype, true},
};
#define NPROBES (sizeof(PROBES) / sizeof(PROBES[0]))

/* ---- Bad handles -------------------------------------------------------- */

/* Every probe with every bad context, then every array probe with every bad
 * array; the same probes then succeed on a copy of the fixture (so each one
 * is known to be a valid call but for the handles). */
static int test_bad_handles(const test_case_t *tc) {
    (void)tc;
    hd_t f;
    if (hd_setup(&f)) {
        return 1;
    }
    /* A freed context and a freed array, kept through stale copies. */
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *stale_ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &stale_ctx));
    caterva_ctx_t *tmp_ctx = stale_ctx;
    CHECK_OK(caterva_ctx_free(&tmp_ctx));
    CHECK(tmp_ctx == NULL);
    caterva_array_t *stale_arr = NULL;
    CHECK_OK(caterva_from_cframe(f.ctx, f.cframe, f.cframe_len, true, &stale_arr));
    caterva_array_t *tmp_arr = stale_arr;
    CHECK_OK(caterva_free(f.ctx, &tmp_arr));
    CHECK(tmp_arr == NULL);
    /* Handles the caller made itself: a context struct, a copy of the array struct. */
    caterva_ctx_t foreign_ctx = {&cfg};
    caterva_array_t foreign_arr = *f.arr;

    caterva_ctx_t *bad_ctx[3] = {NULL, stale_ctx, &foreign_ctx};
    int ctx_rc[3] = {CATERVA_ERR_NULL_POINTER, CATERVA_ERR_INVALID_ARGUMENT, CATERVA_ERR_INVALID_ARGUMENT};
    caterva_array_t *bad_arr[3] = {NULL, stale_arr, &foreign_arr};
    int arr_rc[3] = {CATERVA_ERR_NULL_POINTER, CATERVA_ERR_INVALID_ARGUMENT, CATERVA_ERR_INVALID_ARGUMENT};

    for (size_t p = 0; p < NPROBES; p++) {
        const probe_def_t *d = &PROBES[p];
        for (int k = 0; k < 3; k++) {
            f.touched = 0;
            int rc = d->probe(&f, bad_ctx[k], f.arr);
            if (rc != ctx_rc[k] || f.touched) {
                fprintf(stderr, "    %s with bad ctx %d: returned %d (expected %d)%s\n", d->name, k, rc, ctx_rc[k],
                        f.touched ? ", wrote an output" : "");
                return 1;
            }
            if (hd_unchanged(&f)) {
                fprintf(stderr, "    %s with bad ctx %d changed the array\n", d->name, k);
                return 1;
            }
        }
        /* A live context whose cfg the caller set to NULL. */
        caterva_config_t *saved = f.ctx->cfg;
        f.ctx->cfg = NULL;
        f.touched = 0;
        int rc = d->probe(&f, f.ctx, f.arr);
        f.ctx->cfg = saved;
        if (rc != CATERVA_ERR_NULL_POINTER || f.touched || hd_unchanged(&f)) {
            fprintf(stderr, "    %s with ctx->cfg == NULL: returned %d\n", d->name, rc);
            return 1;
        }
        for (int k = 0; d->takes_array && k < 3; k++) {
            f.touched = 0;
            rc = d->probe(&f, f.ctx, bad_arr[k]);
            if (rc != arr_rc[k] || f.touched) {
                fprintf(stderr, "    %s with bad array %d: returned %d (expected %d)%s\n", d->name, k, rc,
                        arr_rc[k], f.touched ? ", wrote an output" : "");
                return 1;
            }
            if (hd_unchanged(&f)) {
                fprintf(stderr, "    %s with bad array %d changed the array\n", d->name, k);
                return 1;
            }
        }
    }
    /* caterva_print_meta takes no context. */
    CHECK_RC(caterva_print_meta(NULL), CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_print_meta(stale_arr), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_print_meta(&foreign_arr), CATERVA_ERR_INVALID_ARGUMENT);

    /* With good handles, every probe succeeds (on a scratch copy, for those
     * that change or free the array), so the failures above came from the
     * handles alone. */
    for (size_t p = 0; p < NPROBES; p++) {
        const probe_def_t *d = &PROBES[p];
        caterva_array_t *scratch = NULL;
        CHECK_OK(caterva_from_cframe(f.ctx, f.cframe, f.cframe_len, true, &scratch));
        int rc = d->probe(&f, f.ctx, scratch);
        if (rc != CATERVA_SUCCEED) {
            fprintf(stderr, "    %s with good handles: returned %d\n", d->name, rc);
            return 1;
        }
        if (d->probe != p_free) {
            CHECK_OK(caterva_free(f.ctx, &scratch));
        }
        /* Undo what the constructors, save, get_slice, copy and remove did. */
        CHECK_OK(caterva_remove(f.ctx, NEW_PATH));
        CHECK_OK(caterva_save(f.ctx, f.arr, VICTIM));
    }
    return hd_end(&f);
}

/* Double frees through stale copies are refused, and leave the copy alone. */
static int test_double_free(const test_case_t *tc) {
    (void)tc;
    hd_t f;
    if (hd_setup(&f)) {
        return 1;
    }
    caterva_array_t *a = NULL;
    CHECK_OK(caterva_from_cframe(f.ctx, f.cframe, f.cframe_len, true, &a));
    caterva_array_t *copy = a;
    CHECK_OK(caterva_free(f.ctx, &a));
    CHECK(a == NULL);
    EXPECT(&f, caterva_free(f.ctx, &copy), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(copy != NULL);
    /* Freeing NULL is fine, twice. */
    CHECK_OK(caterva_free(f.ctx, &a));
    CHECK_OK(caterva_free(f.ctx, &a));

    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *c = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &c));
    caterva_ctx_t *ccopy = c;
    CHECK_OK(caterva_ctx_free(&c));
    CHECK(c == NULL);
    EXPECT(&f, caterva_ctx_free(&ccopy), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(ccopy != NULL);
    CHECK_OK(caterva_ctx_free(&c));
    /* A context the caller made, or the address of an array, is not a context. */
    caterva_ctx_t foreign = {&cfg};
    caterva_ctx_t *fp = &foreign;
    EXPECT(&f, caterva_ctx_free(&fp), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(fp == &foreign);
    fp = (caterva_ctx_t *)(void *)f.arr;
    EXPECT(&f, caterva_ctx_free(&fp), CATERVA_ERR_INVALID_ARGUMENT);
    /* ... nor is a context an array. */
    caterva_array_t *ap = (caterva_array_t *)(void *)f.ctx;
    EXPECT(&f, caterva_free(f.ctx, &ap), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(ap == (caterva_array_t *)(void *)f.ctx);
    return hd_end(&f);
}

/* A freed handle stays refused however many handles are made after it:
 * handles never reuse a freed handle's address (with malloc they did, and a
 * stale pointer then freed or read the new array that took its place). */
static int test_stale_handles_after_reuse(const test_case_t *tc) {
    (void)tc;
    hd_t f;
    if (hd_setup(&f)) {
        return 1;
    }
    enum { N = 300 };
    caterva_array_t *stale[N];
    caterva_ctx_t *stale_ctx[N];
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    for (int i = 0; i < N; i++) {
        caterva_array_t *a = NULL;
        CHECK_OK(caterva_from_cframe(f.ctx, f.cframe, f.cframe_len, true, &a));
        stale[i] = a;
        CHECK_OK(caterva_free(f.ctx, &a));
        caterva_ctx_t *c = NULL;
        CHECK_OK(caterva_ctx_new(&cfg, &c));
        stale_ctx[i] = c;
        CHECK_OK(caterva_ctx_free(&c));
    }
    /* Live handles made now: none of them may answer to a stale pointer. */
    caterva_array_t *live[8];
    caterva_ctx_t *live_ctx[8];
    for (int j = 0; j < 8; j++) {
        CHECK_OK(caterva_from_cframe(f.ctx, f.cframe, f.cframe_len, true, &live[j]));
        CHECK_OK(caterva_ctx_new(&cfg, &live_ctx[j]));
    }
    for (int i = 0; i < N; i++) {
        for (int j = 0; j < 8; j++) {
            CHECK(stale[i] != live[j]);
            CHECK(stale_ctx[i] != live_ctx[j]);
        }
        for (int k = 0; k < i; k++) {
            CHECK(stale[i] != stale[k]);
        }
        uint8_t buf[10 * 8 * 4];
        CHECK_RC(caterva_to_buffer(f.ctx, stale[i], buf, (int64_t)sizeof(buf)), CATERVA_ERR_INVALID_ARGUMENT);
        caterva_array_t *copy = stale[i];
        CHECK_RC(caterva_free(f.ctx, &copy), CATERVA_ERR_INVALID_ARGUMENT);
        CHECK(copy == stale[i]);
        caterva_ctx_t *ccopy = stale_ctx[i];
        CHECK_RC(caterva_ctx_free(&ccopy), CATERVA_ERR_INVALID_ARGUMENT);
        CHECK(ccopy == stale_ctx[i]);
    }
    for (int j = 0; j < 8; j++) {
        uint8_t buf[10 * 8 * 4];
        CHECK_OK(caterva_to_buffer(f.ctx, live[j], buf, (int64_t)sizeof(buf)));
        CHECK(memcmp(buf, f.data, sizeof(buf)) == 0);
        CHECK_OK(caterva_free(f.ctx, &live[j]));
        CHECK_OK(caterva_ctx_free(&live_ctx[j]));
    }
    return hd_end(&f);
}

/* An array's own super-chunk cannot be adopted by a second array (both
 * would free it); the refused super-chunk stays the first array's. */
static int test_from_owned_schunk(const test_case_t *tc) {
    (void)tc;
    hd_t f;
    if (hd_setup(&f)) {
        return 1;
    }
    caterva_array_t *out = SENTINEL;
    EXPECT(&f, caterva_from_schunk(f.ctx, f.arr->sc, &out), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(out == SENTINEL);
    /* Also after a change that gives the array a new super-chunk. */
    caterva_array_t *other = NULL;
    CHECK_OK(caterva_from_cframe(f.ctx, f.cframe, f.cframe_len, false, &other));
    uint8_t row[8 * 4] = {0};
    CHECK_OK(caterva_append(f.ctx, other, row, (int64_t)sizeof(row), 0)); /* copies the borrowed frame */
    CHECK_RC(caterva_from_schunk(f.ctx, other->sc, &out), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(out == SENTINEL);
    CHECK_OK(caterva_free(f.ctx, &other));
    return hd_end(&f);
}

/* ---- Bad configurations ------------------------------------------------ */


/* A registered codec that copies, and a filter that does nothing. */
static int copy_encoder(const uint8_t *in, int32_t in_len, uint8_t *out, int32_t out_len, uint8_t meta,
                        blosc2_cparams *cparams, const void *chunk) {
    (void)meta, (void)cparams, (void)chunk;
    if (in_len > out_len) return 0; /* does not fit: stored as it is */
    memcpy(out, in, (size_t)in_len);
    return in_len;
}
static int copy_decoder(const uint8_t *in, int32_t in_len, uint8_t *out, int32_t out_len, uint8_t meta,
                        blosc2_dparams *dparams, const void *chunk) {
    (void)meta, (void)dparams, (void)chunk;
    if (in_len > out_len) return -1;
    memcpy(out, in, (size_t)in_len);
    return in_len;
}
static int identity_forward(const uint8_t *src, uint8_t *dest, int32_t size, uint8_t meta, blosc2_cparams *cparams,
                            uint8_t id) {
    (void)meta, (void)cparams, (void)id;
    memcpy(dest, src, (size_t)size);
    return 0;
}
static int identity_backward(const uint8_t *src, uint8_t *dest, int32_t size, uint8_t meta, blosc2_dparams *dparams,
                             uint8_t id) {
    (void)meta, (void)dparams, (void)id;
    memcpy(dest, src, (size_t)size);
    return 0;
}
#define BAD_PLUGIN_CFG(cfgp)                                                \
    do {                                                                    \
        caterva_ctx_t *out_ = SENTINEL;                                     \
        CHECK_RC(caterva_ctx_new((cfgp), &out_), CATERVA_ERR_INVALID_ARGUMENT); \
        CHECK(out_ == SENTINEL);                                            \
    } while (0)

static int test_bad_configs(const test_case_t *tc) {
    (void)tc;
    hd_t f;
    if (hd_setup(&f)) {
        return 1;
    }
    caterva_config_t cfg;
#define BAD_CFG(stmt, rc)                                                   \
    do {                                                                    \
        cfg = CATERVA_CONFIG_DEFAULTS;                    \
        stmt;                                                               \
        caterva_ctx_t *out_ = SENTINEL;                                     \
        CHECK_RC(caterva_ctx_new(&cfg, &out_), rc);                         \
        CHECK(out_ == SENTINEL);                                            \
    } while (0)
    BAD_CFG(cfg.compcodec = 3, CATERVA_ERR_INVALID_ARGUMENT);
    BAD_CFG(cfg.compcodec = BLOSC_LAST_CODEC, CATERVA_ERR_INVALID_ARGUMENT);
    BAD_CFG(cfg.compcodec = 31, CATERVA_ERR_INVALID_ARGUMENT);
    BAD_CFG(cfg.filters[5] = BLOSC_LAST_FILTER, CATERVA_ERR_INVALID_ARGUMENT);
    BAD_CFG(cfg.filters[0] = 31, CATERVA_ERR_INVALID_ARGUMENT);
    BAD_CFG(cfg.complevel = 10, CATERVA_ERR_INVALID_ARGUMENT);
    BAD_CFG(cfg.complevel = 255, CATERVA_ERR_INVALID_ARGUMENT);
    BAD_CFG(cfg.nthreads = 0, CATERVA_ERR_INVALID_ARGUMENT);
    BAD_CFG(cfg.nthreads = -1, CATERVA_ERR_INVALID_ARGUMENT);
    BAD_CFG(cfg.nthreads = INT16_MIN, CATERVA_ERR_INVALID_ARGUMENT);
    BAD_CFG(cfg.splitmode = 0, CATERVA_ERR_INVALID_ARGUMENT);
    BAD_CFG(cfg.splitmode = 5, CATERVA_ERR_INVALID_ARGUMENT);
    BAD_CFG(cfg.splitmode = -1, CATERVA_ERR_INVALID_ARGUMENT);
    BAD_CFG(cfg.alloc = NULL, CATERVA_ERR_NULL_POINTER);
    BAD_CFG(cfg.free = NULL, CATERVA_ERR_NULL_POINTER);
#undef BAD_CFG
    /* Plugin ids are taken once something is registered under them, and
     * refused before (the first compression would fail). */
    cfg = CATERVA_CONFIG_DEFAULTS;
    cfg.compcodec = BLOSC2_USER_REGISTERED_CODECS_START;
    BAD_PLUGIN_CFG(&cfg);
    cfg = CATERVA_CONFIG_DEFAULTS;
    cfg.filters[4] = BLOSC2_USER_REGISTERED_FILTERS_START;
    BAD_PLUGIN_CFG(&cfg);
    blosc2_codec codec = {.compcode = BLOSC2_USER_REGISTERED_CODECS_START, .compname = "ctest_copy", .complib = 1,
                          .version = 1, .encoder = copy_encoder, .decoder = copy_decoder};
    CHECK(blosc2_register_codec(&codec) == 0);
    blosc2_filter filter = {.id = BLOSC2_USER_REGISTERED_FILTERS_START, .name = "ctest_identity", .version = 1,
                            .forward = identity_forward, .backward = identity_backward};
    CHECK(blosc2_register_filter(&filter) == 0);
    cfg.compcodec = BLOSC2_USER_REGISTERED_CODECS_START;
    caterva_ctx_t *c = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &c));
    /* And they work: an array round-trips through them. */
    caterva_params_t params;
    caterva_storage_t storage;
    h_small_params(&params, &storage, NULL, true);
    int32_t items[80], back[80];
    for (int i = 0; i < 80; i++) items[i] = i * 7 - 3;
    caterva_array_t *arr;
    CHECK_OK(caterva_from_buffer(c, items, sizeof(items), &params, &storage, &arr));
    CHECK_OK(caterva_to_buffer(c, arr, back, sizeof(back)));
    CHECK(memcmp(items, back, sizeof(items)) == 0);
    CHECK_OK(caterva_free(c, &arr));
    CHECK_OK(caterva_ctx_free(&c));
    return hd_end(&f);
}

/* ---- Bad params and storages, for every function that takes them -------- */

/* Run every storage-taking function (the five constructors, and unless
 * ctors_only get_slice and copy from the fixture) with params/storage; all
 * must return rc, leave *array alone, write no file and leave the fixture
 * as it was. */
static int expect_all_create_fail(hd_t *f, caterva_params_t *params, caterva_storage_t *storage, int rc,
                                  bool ctors_only) {
    uint8_t fill[4] = {1, 2, 3, 4};
    int64_t start[2] = {1, 1}, stop[2] = {7, 8};
    for (int k = 0; k < 7; k++) {
        if (ctors_only && k >= 5) {
            break;
        }
        caterva_array_t *out = SENTINEL;
        int got;
        switch (k) {
        case 0: got = caterva_uninit(f->ctx, params, storage, &out); break;
        case 1: got = caterva_empty(f->ctx, params, storage, &out); break;
        case 2: got = caterva_zeros(f->ctx, params, storage, &out); break;
        case 3: got = caterva_full(f->ctx, params, storage, fill, &out); break;
        case 4: got = caterva_from_buffer(f->ctx, f->data, (int64_t)sizeof(f->data), params, storage, &out); break;
        case 5: got = caterva_get_slice(f->ctx, f->arr, start, stop, storage, &out); break;
        default: got = caterva_copy(f->ctx, f->arr, storage, &out); break;
        }
        if (got != rc) {
            fprintf(stderr, "    function %d: returned %d, expected %d\n", k, got, rc);
        }
        CHECK(got == rc);
        CHECK(out == SENTINEL);
        if (hd_unchanged(f)) {
            return 1;
        }
    }
    return 0;
}

static int test_bad_params_and_storages(const test_case_t *tc) {
    (void)tc;
    hd_t f;
    if (hd_setup(&f)) {
        return 1;
    }
    caterva_params_t params;
    caterva_storage_t storage;
    uint8_t content[3] = {1, 2, 3};
    char new_path[] = NEW_PATH, new_dir[] = NEW_DIR, empty[] = "";
    char not_utf8[] = "ctest_\xff\xfe.b2frame";

#define BAD(stmt, rc, ctors_only)                                         \
    do {                                                                    \
        for (int b_ = 0; b_ < 2; b_++) {                                    \
            h_small_params(&params, &storage, b_ ? new_dir : new_path, true);          \
            storage.contiguous = !b_;                                       \
            stmt;                                                           \
            if (expect_all_create_fail(&f, &params, &storage, rc, ctors_only)) { \
                fprintf(stderr, "    (with %s, backend %d)\n", #stmt, b_); \
                return 1;                                                   \
            }                                                               \
        }                                                                   \
    } while (0)

    /* params (the constructors only take them) */
    BAD(params.ndim = -1, CATERVA_ERR_INVALID_ARGUMENT, true);
    BAD(params.ndim = CATERVA_MAX_DIM + 1, CATERVA_ERR_INVALID_ARGUMENT, true);
    BAD(params.ndim = INT8_MIN, CATERVA_ERR_INVALID_ARGUMENT, true);
    BAD(params.itemsize = 0, CATERVA_ERR_INVALID_ARGUMENT, true);
    BAD(params.shape[1] = -8, CATERVA_ERR_INVALID_ARGUMENT, true);
    BAD(params.shape[0] = INT64_MIN, CATERVA_ERR_INVALID_ARGUMENT, true);
    BAD(params.shape[0] = INT64_MAX, CATERVA_ERR_INVALID_ARGUMENT, true);
    /* partitions */
    BAD(storage.chunkshape[0] = 0, CATERVA_ERR_INVALID_ARGUMENT, false);
    BAD(storage.chunkshape[1] = -4, CATERVA_ERR_INVALID_ARGUMENT, false);
    BAD(storage.blockshape[0] = 0, CATERVA_ERR_INVALID_ARGUMENT, false);
    BAD(storage.blockshape[1] = -2, CATERVA_ERR_INVALID_ARGUMENT, false);
    BAD(storage.blockshape[1] = 5, CATERVA_ERR_INVALID_ARGUMENT, false); /* > chunkshape */
    BAD(storage.chunkshape[0] = INT32_MAX; storage.chunkshape[1] = INT32_MAX, CATERVA_ERR_INVALID_ARGUMENT, false);
    /* metalayer counts */
    BAD(storage.nmetalayers = 99, CATERVA_ERR_INVALID_ARGUMENT, false);
    BAD(storage.nmetalayers = -1, CATERVA_ERR_INVALID_ARGUMENT, false);
    BAD(storage.nmetalayers = CATERVA_MAX_METALAYERS + 1, CATERVA_ERR_INVALID_ARGUMENT, false);
    BAD(storage.nmetalayers = INT32_MIN, CATERVA_ERR_INVALID_ARGUMENT, false);
    /* metalayer fields: the bad one last of three, after two good ones */
#define META3(i, n, d, s)                                                   \
    storage.metalayers[0].name = "a";                                       \
    storage.metalayers[0].sdata = content;                                  \
    storage.metalayers[0].size = 3;                                         \
    storage.metalayers[1].name = "b";                                       \
    storage.metalayers[1].sdata = content;                                  \
    storage.metalayers[1].size = 0;                                         \
    storage.metalayers[i].name = n;                                         \
    storage.metalayers[i].sdata = d;                                        \
    storage.metalayers[i].size = s;                                         \
    storage.nmetalayers = 3
    BAD(META3(2, NULL, content, 3), CATERVA_ERR_NULL_POINTER, false);
    BAD(META3(2, "c", NULL, 3), CATERVA_ERR_NULL_POINTER, false);
    BAD(META3(2, "c", content, -1), CATERVA_ERR_INVALID_ARGUMENT, false);
    BAD(META3(2, "c", content, INT32_MIN), CATERVA_ERR_INVALID_ARGUMENT, false);
    BAD(META3(2, "", content, 3), CATERVA_ERR_INVALID_ARGUMENT, false);
    BAD(META3(2, "a_metalayer_name_longer_than_31_bytes", content, 3), CATERVA_ERR_INVALID_ARGUMENT, false);
    BAD(META3(2, "caterva", content, 3), CATERVA_ERR_INVALID_ARGUMENT, false);
    BAD(META3(2, "b2nd", content, 3), CATERVA_ERR_INVALID_ARGUMENT, false);
    BAD(META3(2, "a", content, 3), CATERVA_ERR_INVALID_ARGUMENT, false); /* twice */
    BAD(META3(2, "\xff\xfe", content, 3), CATERVA_ERR_INVALID_ARGUMENT, false);
#undef META3
    /* urlpaths: empty, not UTF-8, a directory where a file goes (and the
     * other way round: a file where a directory goes). */
    BAD(storage.urlpath = empty, CATERVA_ERR_INVALID_STORAGE, false);
    BAD(storage.urlpath = not_utf8, CATERVA_ERR_INVALID_ARGUMENT, false);
#undef BAD
    CHECK(!h_exists(not_utf8));
    char dir[] = "ctest_hardening_dir.b2frame";
    CHECK_OK(caterva_remove(f.ctx, dir));
    h_small_params(&params, &storage, dir, true);
    storage.contiguous = false; /* makes a directory there */
    caterva_array_t *sparse = NULL;
    CHECK_OK(caterva_zeros(f.ctx, &params, &storage, &sparse));
    CHECK_OK(caterva_free(f.ctx, &sparse));
    storage.contiguous = true;
    if (expect_all_create_fail(&f, &params, &storage, CATERVA_ERR_INVALID_STORAGE, false)) {
        return 1;
    }
    CHECK(h_is_dir(dir));
    /* ... and caterva_save refuses it too. */
    EXPECT(&f, caterva_save(f.ctx, f.arr, dir), CATERVA_ERR_INVALID_STORAGE);
    EXPECT(&f, caterva_save(f.ctx, f.arr, empty), CATERVA_ERR_INVALID_STORAGE);
    EXPECT(&f, caterva_save(f.ctx, f.arr, not_utf8), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(h_is_dir(dir));
    CHECK_OK(caterva_remove(f.ctx, dir));
    CHECK(!h_exists(dir));
    return hd_end(&f);
}

/* ---- Buffers, shapes, selections ---------------------------------------- */

static int test_bad_buffers(const test_case_t *tc) {
    (void)tc;
    hd_t f;
    if (hd_setup(&f)) {
        return 1;
    }
    uint8_t out[10 * 8 * 4 + 8];
    int64_t n = (int64_t)sizeof(f.data);
    int64_t start[2] = {1, 1}, stop[2] = {3, 4}, shape[2] = {2, 3};
    int64_t bsize = 2 * 3 * 4;
    memset(out, 0xD7, sizeof(out));
#define UNTOUCHED()                                                         \
    for (size_t i_ = 0; i_ < sizeof(out); i_++) {                           \
        CHECK(out[i_] == 0xD7);                                             \
    }
    /* to_buffer: negative, zero, short */
    EXPECT(&f, caterva_to_buffer(f.ctx, f.arr, out, -1), CATERVA_ERR_INVALID_ARGUMENT);
    EXPECT(&f, caterva_to_buffer(f.ctx, f.arr, out, INT64_MIN), CATERVA_ERR_INVALID_ARGUMENT);
    EXPECT(&f, caterva_to_buffer(f.ctx, f.arr, out, 0), CATERVA_ERR_INVALID_ARGUMENT);
    EXPECT(&f, caterva_to_buffer(f.ctx, f.arr, out, n - 1), CATERVA_ERR_INVALID_ARGUMENT);
    UNTOUCHED();
    /* get/set_slice_buffer: negative or short buffer shapes, negative sizes */
    int64_t bad_shapes[4][2] = {{-2, 3}, {2, -3}, {1, 3}, {INT64_MIN, INT64_MIN}};
    for (int k = 0; k < 4; k++) {
        EXPECT(&f, caterva_get_slice_buffer(f.ctx, f.arr, start, stop, out, bad_shapes[k], bsize),
               CATERVA_ERR_INVALID_ARGUMENT);
        EXPECT(&f, caterva_set_slice_buffer(f.ctx, out, bad_shapes[k], bsize, start, stop, f.arr),
               CATERVA_ERR_INVALID_ARGUMENT);
    }
    /* a buffer shape whose byte size overflows */
    int64_t huge[2] = {INT64_MAX / 2, 4};
    EXPECT(&f, caterva_get_slice_buffer(f.ctx, f.arr, start, stop, out, huge, bsize), CATERVA_ERR_INVALID_ARGUMENT);
    EXPECT(&f, caterva_get_slice_buffer(f.ctx, f.arr, start, stop, out, shape, -1), CATERVA_ERR_INVALID_ARGUMENT);
    EXPECT(&f, caterva_get_slice_buffer(f.ctx, f.arr, start, stop, out, shape, bsize - 1),
           CATERVA_ERR_INVALID_ARGUMENT);
    EXPECT(&f, caterva_set_slice_buffer(f.ctx, out, shape, INT64_MIN, start, stop, f.arr),
           CATERVA_ERR_INVALID_ARGUMENT);
    UNTOUCHED();
    /* insert/append: negative sizes, NULL buffers */
    EXPECT(&f, caterva_insert(f.ctx, f.arr, out, INT64_MIN, 0, 0), CATERVA_ERR_INVALID_ARGUMENT);
    EXPECT(&f, caterva_append(f.ctx, f.arr, out, -32, 0), CATERVA_ERR_INVALID_ARGUMENT);
    EXPECT(&f, caterva_append(f.ctx, f.arr, NULL, 32, 0), CATERVA_ERR_NULL_POINTER);
    /* from_cframe: negative lengths */
    caterva_array_t *arr = SENTINEL;
    EXPECT(&f, caterva_from_cframe(f.ctx, f.cframe, INT64_MIN, true, &arr), CATERVA_ERR_INVALID_ARGUMENT);
    EXPECT(&f, caterva_from_cframe(f.ctx, f.cframe, -1, false, &arr), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(arr == SENTINEL);
    /* resize: a NULL shape, negative entries */
    int64_t neg[2] = {10, -1};
    EXPECT(&f, caterva_resize(f.ctx, f.arr, NULL, NULL), CATERVA_ERR_NULL_POINTER);
    EXPECT(&f, caterva_resize(f.ctx, f.arr, neg, NULL), CATERVA_ERR_INVALID_ARGUMENT);
    /* squeeze_index: a flag byte other than 0 or 1 counts as true, as in C:
     * axis 0 has length 10 and cannot be squeezed. */
    uint8_t flags[2] = {2, 0};
    EXPECT(&f, caterva_squeeze_index(f.ctx, f.arr, (bool *)(void *)flags), CATERVA_ERR_INVALID_INDEX);
#undef UNTOUCHED
    return hd_end(&f);
}

static int test_bad_selections(const test_case_t *tc) {
    (void)tc;
    hd_t f;
    if (hd_setup(&f)) {
        return 1;
    }
    int64_t s0[2] = {9, 0}, s1[3] = {7, 1, 1};
    int64_t *sel[2] = {s0, s1};
    int64_t size[2] = {2, 3}, shape[2] = {2, 3};
    uint8_t out[64];
    int64_t bsize = 2 * 3 * 4;
    memset(out, 0xD7, sizeof(out));
    /* negative counts */
    int64_t neg[2][2] = {{-1, 3}, {2, INT64_MIN}};
    for (int k = 0; k < 2; k++) {
        EXPECT(&f, caterva_get_orthogonal_selection(f.ctx, f.arr, sel, neg[k], out, shape, bsize),
               CATERVA_ERR_INVALID_ARGUMENT);
        EXPECT(&f, caterva_set_orthogonal_selection(f.ctx, f.arr, sel, neg[k], out, shape, bsize),
               CATERVA_ERR_INVALID_ARGUMENT);
    }
    /* a NULL list with a positive count */
    sel[0] = NULL;
    EXPECT(&f, caterva_get_orthogonal_selection(f.ctx, f.arr, sel, size, out, shape, bsize),
           CATERVA_ERR_NULL_POINTER);
    EXPECT(&f, caterva_set_orthogonal_selection(f.ctx, f.arr, sel, size, out, shape, bsize),
           CATERVA_ERR_NULL_POINTER);
    sel[0] = s0;
    /* indices out of range, the last one of the last list */
    int64_t bad[4] = {8, -1, INT64_MAX, INT64_MIN};
    for (int k = 0; k < 4; k++) {
        s1[2] = bad[k];
        EXPECT(&f, caterva_get_orthogonal_selection(f.ctx, f.arr, sel, size, out, shape, bsize),
               CATERVA_ERR_INVALID_INDEX);
        EXPECT(&f, caterva_set_orthogonal_selection(f.ctx, f.arr, sel, size, out, shape, bsize),
               CATERVA_ERR_INVALID_INDEX);
    }
    s1[2] = 1;
    /* negative buffer shapes and sizes */
    int64_t nshape[2] = {2, -3};
    EXPECT(&f, caterva_get_orthogonal_selection(f.ctx, f.arr, sel, size, out, nshape, bsize),
           CATERVA_ERR_INVALID_ARGUMENT);
    EXPECT(&f, caterva_get_orthogonal_selection(f.ctx, f.arr, sel, size, out, shape, INT64_MIN),
           CATERVA_ERR_INVALID_ARGUMENT);
    for (size_t i = 0; i < sizeof(out); i++) {
        CHECK(out[i] == 0xD7);
    }
    return hd_end(&f);
}

/* ---- Metalayers, dtype, paths -------------------------------------------- */

static int test_bad_metalayer_args(const test_case_t *tc) {
    (void)tc;
    hd_t f;
    if (hd_setup(&f)) {
        return 1;
    }
    uint8_t content[3] = {7, 8, 9};
    caterva_metalayer_t m = {"m", content, 3};
    /* NULL name, NULL content with a size, negative sizes: every setter */
    typedef int (*put_t)(caterva_ctx_t *, caterva_array_t *, caterva_metalayer_t *);
    put_t puts[3] = {caterva_vlmeta_add, caterva_vlmeta_update, caterva_meta_update};
    const char *names[3] = {"new", "v", "m"};
    for (int k = 0; k < 3; k++) {
        m = (caterva_metalayer_t){NULL, content, 3};
        EXPECT(&f, puts[k](f.ctx, f.arr, &m), CATERVA_ERR_NULL_POINTER);
        m = (caterva_metalayer_t){(char *)names[k], NULL, 3};
        EXPECT(&f, puts[k](f.ctx, f.arr, &m), CATERVA_ERR_NULL_POINTER);
        m = (caterva_metalayer_t){(char *)names[k], content, -1};
        EXPECT(&f, puts[k](f.ctx, f.arr, &m), CATERVA_ERR_INVALID_ARGUMENT);
        m = (caterva_metalayer_t){(char *)names[k], content, INT32_MIN};
        EXPECT(&f, puts[k](f.ctx, f.arr, &m), CATERVA_ERR_INVALID_ARGUMENT);
        m = (caterva_metalayer_t){"\xff", content, 3};
        EXPECT(&f, puts[k](f.ctx, f.arr, &m), CATERVA_ERR_INVALID_ARGUMENT);
    }
    /* the geometry metalayers belong to the library */
    m = (caterva_metalayer_t){"caterva", content, 3};
    CHECK(caterva_meta_update(f.ctx, f.arr, &m) != CATERVA_SUCCEED);
    if (hd_unchanged(&f)) {
        return 1;
    }
    /* getters: NULL or non-UTF-8 names, missing names; outputs untouched */
    caterva_metalayer_t got = {SENTINEL, SENTINEL, -3};
    EXPECT(&f, caterva_meta_get(f.ctx, f.arr, NULL, &got), CATERVA_ERR_NULL_POINTER);
    EXPECT(&f, caterva_vlmeta_get(f.ctx, f.arr, "\xff", &got), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(caterva_meta_get(f.ctx, f.arr, "absent", &got) != CATERVA_SUCCEED);
    CHECK(caterva_vlmeta_get(f.ctx, f.arr, "absent", &got) != CATERVA_SUCCEED);
    CHECK(got.name == SENTINEL && got.sdata == SENTINEL && got.size == -3);
    /* dtype */
    char *dtype = SENTINEL;
    EXPECT(&f, caterva_set_dtype(f.ctx, f.arr, NULL), CATERVA_ERR_NULL_POINTER);
    EXPECT(&f, caterva_set_dtype(f.ctx, f.arr, ""), CATERVA_ERR_INVALID_ARGUMENT);
    EXPECT(&f, caterva_set_dtype(f.ctx, f.arr, "<f8"), CATERVA_ERR_INVALID_ARGUMENT); /* itemsize is 4 */
    EXPECT(&f, caterva_get_dtype(f.ctx, f.arr, NULL), CATERVA_ERR_NULL_POINTER);
    CHECK(dtype == SENTINEL);
    /* paths */
    caterva_array_t *out = SENTINEL;
    EXPECT(&f, caterva_open(f.ctx, "", &out), CATERVA_ERR_INVALID_STORAGE);
    EXPECT(&f, caterva_open(f.ctx, NEW_PATH, &out), CATERVA_ERR_INVALID_STORAGE);
    CHECK(out == SENTINEL);
    return hd_end(&f);
}

static int test_bad_meta_codec(const test_case_t *tc) {
    (void)tc;
    int64_t shape[2] = {10, 8};
    int32_t chunks[2] = {5, 4}, blocks[2] = {2, 2};
    uint8_t *smeta = SENTINEL;
    CHECK(caterva_serialize_meta(-1, shape, chunks, blocks, &smeta) == -CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(caterva_serialize_meta(CATERVA_MAX_DIM + 1, shape, chunks, blocks, &smeta) == -CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(caterva_serialize_meta(2, NULL, chunks, blocks, &smeta) == -CATERVA_ERR_NULL_POINTER);
    CHECK(caterva_serialize_meta(2, shape, NULL, blocks, &smeta) == -CATERVA_ERR_NULL_POINTER);
    CHECK(caterva_serialize_meta(2, shape, chunks, NULL, &smeta) == -CATERVA_ERR_NULL_POINTER);
    CHECK(caterva_serialize_meta(2, shape, chunks, blocks, NULL) == -CATERVA_ERR_NULL_POINTER);
    CHECK(smeta == SENTINEL);
    int32_t len = caterva_serialize_meta(2, shape, chunks, blocks, &smeta);
    CHECK(len > 0 && smeta != SENTINEL);

    int8_t ndim = -7;
    int64_t oshape[CATERVA_MAX_DIM];
    int32_t ochunks[CATERVA_MAX_DIM], oblocks[CATERVA_MAX_DIM];
    memset(oshape, 0x5A, sizeof(oshape));
    memset(ochunks, 0x5A, sizeof(ochunks));
    memset(oblocks, 0x5A, sizeof(oblocks));
#define OUTS_UNTOUCHED()                                                    \
    do {                                                                    \
        CHECK(ndim == -7);                                                  \
        for (int i_ = 0; i_ < CATERVA_MAX_DIM; i_++) {                      \
            CHECK(oshape[i_] == 0x5A5A5A5A5A5A5A5A && ochunks[i_] == 0x5A5A5A5A && oblocks[i_] == 0x5A5A5A5A); \
        }                                                                   \
    } while (0)
    CHECK(caterva_deserialize_meta(NULL, len, &ndim, oshape, ochunks, oblocks) == -CATERVA_ERR_NULL_POINTER);
    CHECK(caterva_deserialize_meta(smeta, -1, &ndim, oshape, ochunks, oblocks) == -CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(caterva_deserialize_meta(smeta, INT32_MIN, &ndim, oshape, ochunks, oblocks) ==
          -CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(caterva_deserialize_meta(smeta, len, NULL, oshape, ochunks, oblocks) == -CATERVA_ERR_NULL_POINTER);
    CHECK(caterva_deserialize_meta(smeta, len, &ndim, NULL, ochunks, oblocks) == -CATERVA_ERR_NULL_POINTER);
    CHECK(caterva_deserialize_meta(smeta, len, &ndim, oshape, NULL, oblocks) == -CATERVA_ERR_NULL_POINTER);
    CHECK(caterva_deserialize_meta(smeta, len, &ndim, oshape, ochunks, NULL) == -CATERVA_ERR_NULL_POINTER);
    OUTS_UNTOUCHED();
    /* every truncation, and a corrupted ndim */
    for (int32_t k = 0; k < len; k++) {
        CHECK(caterva_deserialize_meta(smeta, k, &ndim, oshape, ochunks, oblocks) < 0);
    }
    uint8_t bad[64];
    memcpy(bad, smeta, (size_t)len);
    bad[2] = 9;
    CHECK(caterva_deserialize_meta(bad, len, &ndim, oshape, ochunks, oblocks) < 0);
    OUTS_UNTOUCHED();
#undef OUTS_UNTOUCHED
    CHECK(caterva_deserialize_meta(smeta, len, &ndim, oshape, ochunks, oblocks) == len);
    CHECK(ndim == 2 && oshape[1] == 8 && ochunks[0] == 5 && oblocks[1] == 2);
    free(smeta);
    return 0;
}

/* Damage a read finds in an array that opened (a sparse frame's chunk file
 * gone, cut short, or a directory) is CATERVA_ERR_BLOSC_FAILED, as the
 * original returned for a chunk c-blosc2 could not read, with a message
 * naming the chunk; opening stays lazy and the other chunks still read. */
static int test_damaged_chunk_files(const test_case_t *tc) {
    (void)tc;
    char path[] = "ctest_damaged_chunks.b2nd";
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    caterva_remove(ctx, path);
    caterva_params_t params = {.itemsize = 8, .ndim = 1, .shape = {40}};
    caterva_storage_t storage = {.urlpath = path, .contiguous = false, .chunkshape = {10}, .blockshape = {5}};
    double src[40];
    for (int i = 0; i < 40; i++) {
        src[i] = i + 0.5;
    }
    caterva_array_t *a = NULL;
    CHECK_OK(caterva_from_buffer(ctx, src, sizeof src, &params, &storage, &a));
    CHECK_OK(caterva_free(ctx, &a));
    char chunk[512];
    snprintf(chunk, sizeof chunk, "%s/00000002.chunk", path);
    for (int kind = 0; kind < 3; kind++) {
        if (kind == 0) {
            CHECK(remove(chunk) == 0);
        } else if (kind == 1) {
            CHECK(truncate(chunk, 20) == 0);
        } else {
            CHECK(remove(chunk) == 0);
            CHECK(mkdir(chunk, 0700) == 0);
        }
        CHECK_OK(caterva_open(ctx, path, &a));
        double out[40];
        int64_t start[1] = {0}, stop[1] = {40}, bshape[1] = {40};
        CHECK_RC(caterva_get_slice_buffer(ctx, a, start, stop, out, bshape, sizeof out), CATERVA_ERR_BLOSC_FAILED);
        CHECK(strstr(caterva_last_error(), "chunk 2") != NULL);
        CHECK_RC(caterva_to_buffer(ctx, a, out, sizeof out), CATERVA_ERR_BLOSC_FAILED);
        /* The chunks around it still read. */
        int64_t s2[1] = {10}, e2[1] = {20}, b2[1] = {10};
        CHECK_OK(caterva_get_slice_buffer(ctx, a, s2, e2, out, b2, 10 * sizeof(double)));
        CHECK(out[0] == 10.5 && out[9] == 19.5);
        CHECK_OK(caterva_free(ctx, &a));
        /* Restore the chunk for the next kind of damage. */
        if (kind == 2) {
            CHECK(rmdir(chunk) == 0);
        }
        caterva_remove(ctx, path);
        CHECK_OK(caterva_from_buffer(ctx, src, sizeof src, &params, &storage, &a));
        CHECK_OK(caterva_free(ctx, &a));
    }
    CHECK_OK(caterva_remove(ctx, path));
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

void suite_hardening(void) {
    RUN_CASE(test_bad_handles);
    RUN_CASE(test_double_free);
    RUN_CASE(test_stale_handles_after_reuse);
    RUN_CASE(test_from_owned_schunk);
    RUN_CASE(test_bad_configs);
    RUN_CASE(test_bad_params_and_storages);
    RUN_CASE(test_bad_buffers);
    RUN_CASE(test_bad_selections);
    RUN_CASE(test_bad_metalayer_args);
    RUN_CASE(test_bad_meta_codec);
    RUN_CASE(test_damaged_chunk_files);
}
