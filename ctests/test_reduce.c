/* caterva_reduce / caterva_reduce_layout (extensions): every op along
 * several axis sets of every case, against a naive computation in double;
 * NaN items, a big-endian dtype, empty axes; bad input returns error codes
 * and writes nothing. */
#include <math.h>
#include <stdlib.h>

#include "harness.h"

#define NOPS 14

static const char *DTYPES[4] = {"|i1", ">i2", "<f4", "<f8"};

static int dtype_index(uint8_t itemsize) {
    return itemsize == 1 ? 0 : itemsize == 2 ? 1 : itemsize == 4 ? 2 : 3;
}

/* Item i of the test data: small integers, halves for floats, NaN now and then. */
static double value(int64_t i, bool is_float) {
    double v = (double)((i * 7) % 23 - 11);
    if (!is_float) {
        return v;
    }
    return i % 13 == 5 ? NAN : v * 0.5;
}

static void store(uint8_t *buf, int64_t i, int d, double v) {
    switch (d) {
    case 0: {
        int8_t x = (int8_t)v;
        memcpy(buf + i, &x, 1);
        break;
    }
    case 1: { /* big-endian int16 */
        uint16_t x = (uint16_t)(int16_t)v;
        buf[2 * i] = (uint8_t)(x >> 8);
        buf[2 * i + 1] = (uint8_t)(x & 0xff);
        break;
    }
    case 2: {
        float x = (float)v;
        memcpy(buf + 4 * i, &x, 4);
        break;
    }
    default:
        memcpy(buf + 8 * i, &v, 8);
    }
}

static bool is_minmax(int op) {
    return op == CATERVA_REDUCE_MIN || op == CATERVA_REDUCE_MAX || op == CATERVA_REDUCE_NANMIN ||
           op == CATERVA_REDUCE_NANMAX;
}

/* NumPy's result dtype of op on items of DTYPES[d] (little-endian machine). */
static const char *want_dtype(int op, int d) {
    bool is_float = d >= 2;
    switch (op) {
    case CATERVA_REDUCE_SUM:
    case CATERVA_REDUCE_NANSUM:
        return is_float ? DTYPES[d] : "<i8";
    case CATERVA_REDUCE_ANY:
    case CATERVA_REDUCE_ALL:
        return "|b1";
    default:
        if (is_minmax(op)) {
            return d == 1 ? "<i2" : DTYPES[d];
        }
        return is_float ? DTYPES[d] : "<f8";
    }
}

/* Result item k of a reduction as a double. */
static double result_item(const uint8_t *out, const char *dtype, int64_t k) {
    if (strcmp(dtype, "<f8") == 0) {
        double v;
        memcpy(&v, out + 8 * k, 8);
        return v;
    }
    if (strcmp(dtype, "<f4") == 0) {
        float v;
        memcpy(&v, out + 4 * k, 4);
        return v;
    }
    if (strcmp(dtype, "<i8") == 0) {
        int64_t v;
        memcpy(&v, out + 8 * k, 8);
        return (double)v;
    }
    if (strcmp(dtype, "<i2") == 0) {
        int16_t v;
        memcpy(&v, out + 2 * k, 2);
        return v;
    }
    if (strcmp(dtype, "|i1") == 0) {
        return (int8_t)out[k];
    }
    return out[k]; /* |b1 */
}

/* The naive reduction of every output item (ncount entries each). */
typedef struct {
    double *sum, *nansum, *m2, *nanm2, *mn, *mx, *nanmn, *nanmx;
    int64_t *n, *nonnan, *nonzero;
    bool *hasnan;
} naive_t;

static double expected(const naive_t *r, int op, int64_t k, double ddof) {
    double n = (double)r->n[k], nn = (double)r->nonnan[k];
    switch (op) {
    case CATERVA_REDUCE_SUM:
        return r->hasnan[k] ? NAN : r->sum[k];
    case CATERVA_REDUCE_NANSUM:
        return r->nansum[k];
    case CATERVA_REDUCE_MEAN:
        return r->hasnan[k] ? NAN : r->sum[k] / n;
    case CATERVA_REDUCE_NANMEAN:
        return r->nansum[k] / nn;
    case CATERVA_REDUCE_MIN:
        return r->hasnan[k] ? NAN : r->mn[k];
    case CATERVA_REDUCE_MAX:
        return r->hasnan[k] ? NAN : r->mx[k];
    case CATERVA_REDUCE_NANMIN:
        return nn == 0 ? NAN : r->nanmn[k];
    case CATERVA_REDUCE_NANMAX:
        return nn == 0 ? NAN : r->nanmx[k];
    case CATERVA_REDUCE_VAR:
    case CATERVA_REDUCE_STD: {
        double var = r->hasnan[k] ? NAN : r->m2[k] / fmax(n - ddof, 0);
        return op == CATERVA_REDUCE_STD ? sqrt(var) : var;
    }
    case CATERVA_REDUCE_NANVAR:
    case CATERVA_REDUCE_NANSTD: {
        double var = nn - ddof <= 0 ? NAN : r->nanm2[k] / (nn - ddof);
        return op == CATERVA_REDUCE_NANSTD ? sqrt(var) : var;
    }
    case CATERVA_REDUCE_ANY:
        return r->nonzero[k] > 0;
    default: /* ALL */
        return r->nonzero[k] == r->n[k];
    }
}

/* Position of item idx in the output of a reduction over `mask`. */
static int64_t out_pos(int8_t ndim, const int64_t *shape, const int64_t *idx, unsigned mask) {
    int64_t o = 0;
    for (int i = 0; i < ndim; i++) {
        if (!(mask & (1u << i))) {
            o = o * shape[i] + idx[i];
        }
    }
    return o;
}

static int check_mask(caterva_ctx_t *ctx, caterva_array_t *arr, const test_case_t *tc, const double *vals,
                      unsigned mask) {
    int8_t ndim = tc->shape.ndim;
    const int64_t *shape = tc->shape.shape;
    int d = dtype_index(tc->itemsize);
    int8_t axes[CATERVA_MAX_DIM];
    int8_t naxes = 0;
    int64_t count = 1, outn = 1;
    for (int i = 0; i < ndim; i++) {
        if (mask & (1u << i)) {
            axes[naxes++] = (int8_t)i;
            count *= shape[i];
        } else {
            outn *= shape[i];
        }
    }
    /* The naive reduction: a pass for sums and extremes, one for squared deviations. */
    size_t m = (size_t)(outn > 0 ? outn : 1);
    naive_t r;
    double **dbl[] = {&r.sum, &r.nansum, &r.m2, &r.nanm2, &r.mn, &r.mx, &r.nanmn, &r.nanmx};
    for (size_t j = 0; j < sizeof(dbl) / sizeof(dbl[0]); j++) {
        *dbl[j] = calloc(m, sizeof(double));
    }
    r.n = calloc(m, sizeof(int64_t));
    r.nonnan = calloc(m, sizeof(int64_t));
    r.nonzero = calloc(m, sizeof(int64_t));
    r.hasnan = calloc(m, sizeof(bool));
    for (size_t k = 0; k < m; k++) {
        r.mn[k] = r.nanmn[k] = INFINITY;
        r.mx[k] = r.nanmx[k] = -INFINITY;
    }
    int64_t nitems = h_nitems(ndim, shape);
    int64_t idx[CATERVA_MAX_DIM] = {0};
    for (int64_t i = 0; i < nitems; i++, h_next_index(ndim, shape, idx)) {
        int64_t o = out_pos(ndim, shape, idx, mask);
        double v = vals[i];
        r.n[o]++;
        r.nonzero[o] += v != 0; /* NaN is non-zero */
        if (isnan(v)) {
            r.hasnan[o] = true;
            continue;
        }
        r.nonnan[o]++;
        r.sum[o] += v;
        r.nansum[o] += v;
        r.mn[o] = fmin(r.mn[o], v);
        r.mx[o] = fmax(r.mx[o], v);
        r.nanmn[o] = r.mn[o];
        r.nanmx[o] = r.mx[o];
    }
    memset(idx, 0, sizeof(idx));
    for (int64_t i = 0; i < nitems; i++, h_next_index(ndim, shape, idx)) {
        int64_t o = out_pos(ndim, shape, idx, mask);
        if (!isnan(vals[i])) {
            double dev = vals[i] - r.nansum[o] / (double)r.nonnan[o];
            r.nanm2[o] += dev * dev;
            r.m2[o] += dev * dev;
        }
    }
    int failed = 0;
    for (int op = 0; op < NOPS && !failed; op++) {
        double ddof = (op == CATERVA_REDUCE_VAR || op == CATERVA_REDUCE_NANSTD) ? 1.0 : 0.0;
        caterva_reduce_result_t res;
        int rc = caterva_reduce_layout(ctx, arr, op, axes, naxes, &res);
        if (count == 0 && is_minmax(op)) {
            /* NumPy: "zero-size array to reduction operation ... which has no identity". */
            if (rc != CATERVA_ERR_INVALID_ARGUMENT) {
                fprintf(stderr, "    op %d mask %u: layout rc %d\n", op, mask, rc);
                failed = 1;
            }
            uint8_t spare[8];
            if (caterva_reduce(ctx, arr, op, axes, naxes, 0, 0, spare, 8, NULL) != CATERVA_ERR_INVALID_ARGUMENT) {
                failed = 1;
            }
            continue;
        }
        if (rc != CATERVA_SUCCEED || res.ndim != ndim - naxes || res.nbytes != outn * res.itemsize ||
            strcmp(res.dtype, want_dtype(op, d)) != 0) {
            fprintf(stderr, "    op %d mask %u: rc %d ndim %d nbytes %" PRId64 " dtype %s (want %s)\n", op, mask,
                    rc, res.ndim, res.nbytes, res.dtype, want_dtype(op, d));
            failed = 1;
            break;
        }
        uint8_t *out = malloc((size_t)res.nbytes + 1);
        caterva_reduce_result_t res2;
        memset(&res2, 0, sizeof(res2));
        rc = caterva_reduce(ctx, arr, op, axes, naxes, ddof, 0, out, res.nbytes, &res2);
        if (rc != CATERVA_SUCCEED || memcmp(&res.shape, &res2.shape, sizeof(res.shape)) != 0 ||
            strcmp(res.dtype, res2.dtype) != 0) {
            fprintf(stderr, "    op %d mask %u: reduce rc %d\n", op, mask, rc);
            failed = 1;
        }
        double tol = strcmp(res.dtype, "<f4") == 0 ? 1e-5 : 1e-10;
        for (int64_t k = 0; k < outn && !failed; k++) {
            double got = result_item(out, res.dtype, k);
            double want = expected(&r, op, k, ddof);
            double scale = fmax(1.0, fabs(want));
            if (!(isnan(got) && isnan(want)) && !(got == want) && !(fabs(got - want) <= tol * scale * 100)) {
                fprintf(stderr, "    op %d mask %u item %" PRId64 ": got %g, want %g\n", op, mask, k, got, want);
                failed = 1;
            }
        }
        free(out);
    }
    for (size_t j = 0; j < sizeof(dbl) / sizeof(dbl[0]); j++) {
        free(*dbl[j]);
    }
    free(r.n);
    free(r.nonnan);
    free(r.nonzero);
    free(r.hasnan);
    return failed;
}

static int test_reduce(const test_case_t *tc) {
    if (h_skip_disk_itemsize(tc)) {
        return 0;
    }
    caterva_ctx_t *ctx = NULL;
    char path[256];
    caterva_params_t params;
    caterva_storage_t storage;
    CHECK_OK(h_setup(tc, "reduce", &ctx, path, &params, &storage));
    int d = dtype_index(tc->itemsize);
    int64_t nitems = h_nitems(tc->shape.ndim, tc->shape.shape);
    double *vals = malloc(sizeof(double) * (size_t)(nitems + 1));
    uint8_t *buf = malloc((size_t)(nitems + 1) * tc->itemsize);
    for (int64_t i = 0; i < nitems; i++) {
        vals[i] = value(i, d >= 2);
        store(buf, i, d, vals[i]);
    }
    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_from_buffer(ctx, buf, nitems * tc->itemsize, &params, &storage, &arr));
    CHECK_OK(caterva_set_dtype(ctx, arr, DTYPES[d]));
    int8_t ndim = tc->shape.ndim;
    unsigned full = (1u << ndim) - 1;
    unsigned masks[5] = {0, full, 1, 1u << (ndim > 0 ? ndim - 1 : 0), 5u & full};
    int failed = 0;
    if (ndim <= 3) {
        for (unsigned mask = 0; mask <= full && !failed; mask++) {
            failed = check_mask(ctx, arr, tc, vals, mask);
        }
    } else {
        for (int j = 0; j < 5 && !failed; j++) {
            failed = check_mask(ctx, arr, tc, vals, masks[j]);
        }
    }
    free(vals);
    free(buf);
    CHECK_OK(caterva_free(ctx, &arr));
    if (tc->backend.persistent) {
        CHECK_OK(caterva_remove(ctx, path));
    }
    CHECK_OK(caterva_ctx_free(&ctx));
    return failed;
}

static int test_reduce_bad_input(const test_case_t *tc) {
    (void)tc;
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    caterva_params_t params = {8, {4, 5}, 2};
    caterva_storage_t storage;
    memset(&storage, 0, sizeof(storage));
    storage.chunkshape[0] = 2;
    storage.chunkshape[1] = 3;
    storage.blockshape[0] = 1;
    storage.blockshape[1] = 2;
    double data[20];
    for (int i = 0; i < 20; i++) {
        data[i] = i;
    }
    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_from_buffer(ctx, data, sizeof(data), &params, &storage, &arr));
    CHECK_OK(caterva_set_dtype(ctx, arr, "<f8"));
    double out[8];
    for (int i = 0; i < 8; i++) {
        out[i] = -1;
    }
    caterva_reduce_result_t res;
    int8_t ax0[1] = {0}, ax2[1] = {2}, axneg[1] = {-1}, dup[2] = {1, 1};
    /* It works: column sums. */
    CHECK_OK(caterva_reduce(ctx, arr, CATERVA_REDUCE_SUM, ax0, 1, 0, 0, out, sizeof(out), &res));
    CHECK(res.ndim == 1 && res.shape[0] == 5 && res.nbytes == 40 && strcmp(res.dtype, "<f8") == 0);
    CHECK(out[0] == 30 && out[4] == 46 && out[5] == -1);
    out[0] = -1;
    /* Bad ops, axes, buffers, bounds. */
    CHECK_RC(caterva_reduce(ctx, arr, -1, ax0, 1, 0, 0, out, sizeof(out), NULL), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_reduce(ctx, arr, NOPS, ax0, 1, 0, 0, out, sizeof(out), NULL), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_reduce(ctx, arr, CATERVA_REDUCE_SUM, ax2, 1, 0, 0, out, sizeof(out), NULL),
             CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_reduce(ctx, arr, CATERVA_REDUCE_SUM, axneg, 1, 0, 0, out, sizeof(out), NULL),
             CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_reduce(ctx, arr, CATERVA_REDUCE_SUM, dup, 2, 0, 0, out, sizeof(out), NULL),
             CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_reduce(ctx, arr, CATERVA_REDUCE_SUM, ax0, -1, 0, 0, out, sizeof(out), NULL),
             CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_reduce(ctx, arr, CATERVA_REDUCE_SUM, ax0, 1, 0, 0, out, 39, NULL), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_reduce(ctx, arr, CATERVA_REDUCE_SUM, ax0, 1, 0, 0, out, -8, NULL), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_reduce(ctx, arr, CATERVA_REDUCE_SUM, ax0, 1, 0, -5, out, sizeof(out), NULL),
             CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_reduce(ctx, arr, CATERVA_REDUCE_SUM, ax0, 1, 0, 16, out, sizeof(out), NULL),
             CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_reduce(ctx, arr, CATERVA_REDUCE_VAR, ax0, 1, NAN, 0, out, sizeof(out), NULL),
             CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(out[0] == -1);
    /* NULL pointers. */
    CHECK_RC(caterva_reduce(NULL, arr, CATERVA_REDUCE_SUM, ax0, 1, 0, 0, out, sizeof(out), NULL),
             CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_reduce(ctx, NULL, CATERVA_REDUCE_SUM, ax0, 1, 0, 0, out, sizeof(out), NULL),
             CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_reduce(ctx, arr, CATERVA_REDUCE_SUM, NULL, 1, 0, 0, out, sizeof(out), NULL),
             CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_reduce(ctx, arr, CATERVA_REDUCE_SUM, ax0, 1, 0, 0, NULL, sizeof(out), NULL),
             CATERVA_ERR_NULL_POINTER);
    CHECK_RC(caterva_reduce_layout(ctx, arr, CATERVA_REDUCE_SUM, ax0, 1, NULL), CATERVA_ERR_NULL_POINTER);
    CHECK(out[0] == -1);
    /* NULL axes with none to give: every axis is kept. */
    CHECK_OK(caterva_reduce_layout(ctx, arr, CATERVA_REDUCE_MAX, NULL, 0, &res));
    CHECK(res.ndim == 2 && res.nbytes == 160);
    CHECK_OK(caterva_free(ctx, &arr));

    /* Items that are not numbers (3-byte items record |V3). */
    caterva_params_t p3 = {3, {4}, 1};
    caterva_storage_t s3;
    memset(&s3, 0, sizeof(s3));
    s3.chunkshape[0] = 2;
    s3.blockshape[0] = 1;
    CHECK_OK(caterva_zeros(ctx, &p3, &s3, &arr));
    CHECK_RC(caterva_reduce(ctx, arr, CATERVA_REDUCE_SUM, ax0, 1, 0, 0, out, sizeof(out), NULL),
             CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_OK(caterva_free(ctx, &arr));
    /* No dtype: 15 user metalayers leave no room for the b2nd one. */
    caterva_params_t p8 = {8, {4}, 1};
    caterva_storage_t s8 = s3;
    uint8_t content = 1;
    char names[CATERVA_MAX_METALAYERS][8];
    s8.nmetalayers = CATERVA_MAX_METALAYERS;
    for (int i = 0; i < CATERVA_MAX_METALAYERS; i++) {
        snprintf(names[i], sizeof(names[i]), "m%d", i);
        s8.metalayers[i].name = names[i];
        s8.metalayers[i].sdata = &content;
        s8.metalayers[i].size = 1;
    }
    CHECK_OK(caterva_zeros(ctx, &p8, &s8, &arr));
    char *dt = (char *)"sentinel";
    CHECK_OK(caterva_get_dtype(ctx, arr, &dt));
    CHECK(dt == NULL);
    CHECK_RC(caterva_reduce(ctx, arr, CATERVA_REDUCE_SUM, ax0, 1, 0, 0, out, sizeof(out), NULL),
             CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_RC(caterva_reduce_layout(ctx, arr, CATERVA_REDUCE_SUM, ax0, 1, &res), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK_OK(caterva_free(ctx, &arr));
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

void suite_reduce(void) {
    RUN_ALL_CASES(test_reduce);
    RUN_CASE(test_reduce_bad_input);
}
