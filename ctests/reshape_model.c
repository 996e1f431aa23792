/* The reference model of reshape_model.h. */
#include <stdlib.h>

#include "reshape_model.h"

static int64_t round_up(int64_t x, int64_t m) {
    return m == 0 ? x : (x + m - 1) / m * m;
}

uint64_t m_trunc(uint64_t v, uint8_t itemsize) {
    return itemsize < 8 ? v & (((uint64_t)1 << (8 * itemsize)) - 1) : v;
}

void m_put(void *buf, int64_t i, uint8_t itemsize, uint64_t v) {
    uint8_t *b = buf;
    for (int k = 0; k < itemsize; k++) {
        b[i * itemsize + k] = k < 8 ? (uint8_t)(v >> (8 * k)) : 0;
    }
}

int64_t m_nitems(const model_t *m) {
    return h_nitems(m->ndim, m->shape);
}

static int m_init_shape(model_t *m, const test_case_t *tc) {
    memset(m, 0, sizeof(*m));
    m->itemsize = tc->itemsize;
    m->ndim = tc->shape.ndim;
    for (int i = 0; i < m->ndim; i++) {
        m->shape[i] = tc->shape.shape[i];
        m->chunkshape[i] = tc->shape.chunkshape[i];
        m->blockshape[i] = tc->shape.blockshape[i];
    }
    m->v = malloc((size_t)m_nitems(m) * sizeof(uint64_t) + 1);
    return m->v == NULL;
}

int m_init(model_t *m, const test_case_t *tc) {
    if (m_init_shape(m, tc)) {
        return 1;
    }
    for (int64_t i = 0; i < m_nitems(m); i++) {
        m->v[i] = h_value(i, m->itemsize);
    }
    return 0;
}

int m_init_value(model_t *m, const test_case_t *tc, uint64_t value) {
    if (m_init_shape(m, tc)) {
        return 1;
    }
    for (int64_t i = 0; i < m_nitems(m); i++) {
        m->v[i] = m_trunc(value, m->itemsize);
    }
    return 0;
}

void m_free(model_t *m) {
    free(m->v);
    m->v = NULL;
}

uint8_t *m_slab(const model_t *m, int axis, int64_t k, int64_t base, int64_t *nbytes) {
    int64_t sshape[CATERVA_MAX_DIM];
    memcpy(sshape, m->shape, sizeof(sshape));
    sshape[axis] = k;
    int64_t n = h_nitems(m->ndim, sshape);
    *nbytes = n * m->itemsize;
    uint8_t *buf = malloc((size_t)*nbytes + 1);
    if (buf == NULL) {
        return NULL;
    }
    for (int64_t j = 0; j < n; j++) {
        m_put(buf, j, m->itemsize, h_value(base + j, m->itemsize));
    }
    return buf;
}

/* Rebuild the model with delta hyperplanes along axis from pos: delta > 0
 * inserts them (from slab, m_slab's layout, or zeros when slab is NULL);
 * delta < 0 removes -delta of them. */
static int m_splice(model_t *m, int axis, int64_t pos, int64_t delta, const uint8_t *slab) {
    int8_t ndim = m->ndim;
    int64_t nshape[CATERVA_MAX_DIM], sshape[CATERVA_MAX_DIM];
    memcpy(nshape, m->shape, sizeof(nshape));
    nshape[axis] += delta;
    memcpy(sshape, m->shape, sizeof(sshape));
    sshape[axis] = delta;
    int64_t n = h_nitems(ndim, nshape);
    uint64_t *nv = malloc((size_t)n * sizeof(uint64_t) + 1);
    if (nv == NULL) {
        return 1;
    }
    int64_t idx[CATERVA_MAX_DIM] = {0};
    if (n > 0) {
        do {
            int64_t p = h_linear(ndim, nshape, idx);
            int64_t a = idx[axis];
            if (a < pos) {
                nv[p] = m->v[h_linear(ndim, m->shape, idx)];
            } else if (a < pos + delta) {
                idx[axis] = a - pos;
                nv[p] = slab == NULL ? 0 : h_get(slab, h_linear(ndim, sshape, idx), m->itemsize);
            } else {
                idx[axis] = a - delta;
                nv[p] = m->v[h_linear(ndim, m->shape, idx)];
            }
            idx[axis] = a;
        } while (h_next_index(ndim, nshape, idx));
    }
    free(m->v);
    m->v = nv;
    memcpy(m->shape, nshape, sizeof(nshape));
    return 0;
}

int m_insert(model_t *m, int axis, int64_t pos, int64_t k, const uint8_t *slab) {
    return m_splice(m, axis, pos, k, slab);
}

int m_delete(model_t *m, int axis, int64_t pos, int64_t len) {
    return m_splice(m, axis, pos, -len, NULL);
}

int m_resize(model_t *m, const int64_t *new_shape, const int64_t *start) {
    for (int i = 0; i < m->ndim; i++) {
        int64_t old = m->shape[i];
        int64_t n = new_shape[i];
        if (n > old) {
            if (m_insert(m, i, start != NULL ? start[i] : old, n - old, NULL)) {
                return 1;
            }
        } else if (n < old) {
            if (m_delete(m, i, start != NULL ? start[i] : n, old - n)) {
                return 1;
            }
        }
    }
    return 0;
}

int m_squeeze(model_t *m, const bool *index) {
    int8_t nd = 0;
    for (int i = 0; i < m->ndim; i++) {
        if (index[i]) {
            if (m->shape[i] != 1) {
                return 1;
            }
            continue;
        }
        m->shape[nd] = m->shape[i];
        m->chunkshape[nd] = m->chunkshape[i];
        m->blockshape[nd] = m->blockshape[i];
        nd++;
    }
    for (int i = nd; i < CATERVA_MAX_DIM; i++) {
        m->shape[i] = 0;
        m->chunkshape[i] = 0;
        m->blockshape[i] = 0;
    }
    m->ndim = nd;
    return 0;
}

int m_slice(const model_t *src, const int64_t *start, const int64_t *stop, const int32_t *chunkshape,
            const int32_t *blockshape, model_t *out) {
    memset(out, 0, sizeof(*out));
    out->itemsize = src->itemsize;
    out->ndim = src->ndim;
    for (int i = 0; i < src->ndim; i++) {
        out->shape[i] = stop[i] - start[i];
        out->chunkshape[i] = chunkshape[i];
        out->blockshape[i] = blockshape[i];
    }
    int64_t n = m_nitems(out);
    out->v = malloc((size_t)n * sizeof(uint64_t) + 1);
    if (out->v == NULL) {
        return 1;
    }
    int64_t idx[CATERVA_MAX_DIM] = {0}, a[CATERVA_MAX_DIM] = {0};
    if (n > 0) {
        do {
            for (int i = 0; i < src->ndim; i++) {
                a[i] = start[i] + idx[i];
            }
            out->v[h_linear(out->ndim, out->shape, idx)] = src->v[h_linear(src->ndim, src->shape, a)];
        } while (h_next_index(out->ndim, out->shape, idx));
    }
    return 0;
}

int m_check(caterva_ctx_t *ctx, caterva_array_t *arr, const model_t *m) {
    CHECK(arr != NULL && arr->sc != NULL);
    CHECK(arr->ndim == m->ndim);
    CHECK(arr->itemsize == m->itemsize);
    int64_t nitems = 1, extnitems = 1, nchunks = 1, chunknitems = 1, blocknitems = 1, extchunknitems = 1;
    for (int i = 0; i < m->ndim; i++) {
        if (arr->shape[i] != m->shape[i]) {
            fprintf(stderr, "    axis %d: shape %" PRId64 ", expected %" PRId64 "\n", i, arr->shape[i], m->shape[i]);
        }
        CHECK(arr->shape[i] == m->shape[i]);
        CHECK(arr->chunkshape[i] == m->chunkshape[i]);
        CHECK(arr->blockshape[i] == m->blockshape[i]);
        int64_t ext = round_up(m->shape[i], m->chunkshape[i]);
        CHECK(arr->extshape[i] == ext);
        /* As in caterva 0.5, an empty axis reports an extended chunk length of 0. */
        int64_t extchunk = m->shape[i] == 0 ? 0 : round_up(m->chunkshape[i], m->blockshape[i]);
        CHECK(arr->extchunkshape[i] == extchunk);
        nitems *= m->shape[i];
        extnitems *= ext;
        nchunks *= m->chunkshape[i] ? ext / m->chunkshape[i] : 0;
        chunknitems *= m->chunkshape[i];
        blocknitems *= m->blockshape[i];
        extchunknitems *= extchunk;
    }
    for (int i = m->ndim; i < CATERVA_MAX_DIM; i++) {
        CHECK(arr->shape[i] == 1);
        CHECK(arr->chunkshape[i] == 1);
        CHECK(arr->blockshape[i] == 1);
        CHECK(arr->extshape[i] == 1);
        CHECK(arr->extchunkshape[i] == 1);
    }
    CHECK(arr->nitems == nitems);
    CHECK(arr->extnitems == extnitems);
    CHECK(arr->nchunks == nchunks);
    CHECK(arr->sc->nchunks == nchunks);
    CHECK(arr->chunknitems == chunknitems);
    CHECK(arr->blocknitems == blocknitems);
    CHECK(arr->extchunknitems == extchunknitems);
    for (int i = 0; i < m->ndim; i++) {
        int64_t stride = 1;
        for (int j = i + 1; j < m->ndim; j++) {
            stride *= m->shape[j];
        }
        CHECK(arr->item_array_strides[i] == stride);
    }

    if (nitems == 0) {
        return 0;
    }
    int64_t nbytes = nitems * m->itemsize;
    uint8_t *buf = malloc((size_t)nbytes);
    CHECK(buf != NULL);
    memset(buf, 0xA5, (size_t)nbytes);
    CHECK_OK(caterva_to_buffer(ctx, arr, buf, nbytes));
    for (int64_t i = 0; i < nitems; i++) {
        uint64_t got = h_get(buf, i, m->itemsize);
        if (got != m->v[i]) {
            int64_t idx[CATERVA_MAX_DIM] = {0};
            int64_t rest = i;
            for (int d = m->ndim - 1; d >= 0; d--) {
                idx[d] = rest % m->shape[d];
                rest /= m->shape[d];
            }
            fprintf(stderr, "    item %" PRId64 " (", i);
            for (int d = 0; d < m->ndim; d++) {
                fprintf(stderr, "%s%" PRId64, d ? ", " : "", idx[d]);
            }
            fprintf(stderr, ") of shape (");
            for (int d = 0; d < m->ndim; d++) {
                fprintf(stderr, "%s%" PRId64, d ? ", " : "", m->shape[d]);
            }
            fprintf(stderr, "): got %" PRIu64 ", expected %" PRIu64 "\n", got, m->v[i]);
            free(buf);
            return 1;
        }
    }
    free(buf);
    return 0;
}

int m_reopen(caterva_ctx_t *ctx, caterva_array_t **arr, const char *path) {
    if (path == NULL || path[0] == '\0') {
        return 0;
    }
    CHECK_OK(caterva_free(ctx, arr));
    CHECK(*arr == NULL);
    CHECK_OK(caterva_open(ctx, path, arr));
    return 0;
}

int m_recheck(caterva_ctx_t *ctx, caterva_array_t **arr, const char *path, const model_t *m) {
    if (path != NULL && path[0] != '\0') {
        return m_reopen(ctx, arr, path) || m_check(ctx, *arr, m);
    }
    if (m_check(ctx, *arr, m)) {
        return 1;
    }
    if (!(*arr)->sc->storage->contiguous) {
        return 0;
    }
    uint8_t *cframe = NULL;
    int64_t len = 0;
    bool needs_free = false;
    CHECK_OK(caterva_to_cframe(ctx, *arr, &cframe, &len, &needs_free));
    caterva_array_t *copy = NULL;
    CHECK_OK(caterva_from_cframe(ctx, cframe, len, true, &copy));
    if (needs_free) {
        free(cframe);
    }
    if (m_check(ctx, copy, m) || m_check_caterva_meta(ctx, copy, m)) {
        fprintf(stderr, "    (the array read back from its cframe)\n");
        return 1;
    }
    CHECK_OK(caterva_free(ctx, &copy));
    return 0;
}

int m_check_caterva_meta(caterva_ctx_t *ctx, caterva_array_t *arr, const model_t *m) {
    caterva_metalayer_t meta = {NULL, NULL, 0};
    CHECK_OK(caterva_meta_get(ctx, arr, "caterva", &meta));
    int8_t ndim = -1;
    int64_t shape[CATERVA_MAX_DIM];
    int32_t chunkshape[CATERVA_MAX_DIM], blockshape[CATERVA_MAX_DIM];
    CHECK(caterva_deserialize_meta(meta.sdata, meta.size, &ndim, shape, chunkshape, blockshape) > 0);
    free(meta.name);
    free(meta.sdata);
    CHECK(ndim == m->ndim);
    for (int i = 0; i < ndim; i++) {
        CHECK(shape[i] == m->shape[i]);
        CHECK(chunkshape[i] == m->chunkshape[i]);
        CHECK(blockshape[i] == m->blockshape[i]);
    }
    return 0;
}

int m_from_buffer(caterva_ctx_t *ctx, const test_case_t *tc, caterva_params_t *params, caterva_storage_t *storage,
                  caterva_array_t **arr, model_t *m) {
    CHECK(m_init(m, tc) == 0);
    int64_t nitems = m_nitems(m);
    int64_t nbytes = nitems * tc->itemsize;
    uint8_t *buf = malloc((size_t)nbytes + 1);
    CHECK(buf != NULL);
    h_fill_buffer(buf, nitems, tc->itemsize);
    CHECK_OK(caterva_from_buffer(ctx, buf, nbytes, params, storage, arr));
    free(buf);
    return m_check(ctx, *arr, m);
}

int m_finish(caterva_ctx_t **ctx, caterva_array_t **arr, model_t *m, char *path) {
    CHECK_OK(caterva_free(*ctx, arr));
    if (path[0] != '\0') {
        CHECK_OK(caterva_remove(*ctx, path));
        CHECK(!h_exists(path));
    }
    m_free(m);
    CHECK_OK(caterva_ctx_free(ctx));
    return 0;
}

void m_run_shape(const char *name, int (*fn)(const test_case_t *), const shape_case_t *shape) {
    for (size_t i = 0; i < 4; i++) {
        for (size_t b = 0; b < 4; b++) {
            test_case_t tc = {ITEMSIZES[i], *shape, BACKENDS[b]};
            h_report(name, &tc, fn(&tc));
        }
    }
}

int m_expect_meta(caterva_ctx_t *ctx, caterva_array_t *arr, const char *name, const uint8_t *data,
                  int32_t size, bool vl) {
    caterva_metalayer_t got = {NULL, NULL, 0};
    bool exists = false;
    if (vl) {
        CHECK_OK(caterva_vlmeta_exists(ctx, arr, name, &exists));
        CHECK(exists);
        CHECK_OK(caterva_vlmeta_get(ctx, arr, name, &got));
    } else {
        CHECK_OK(caterva_meta_exists(ctx, arr, name, &exists));
        CHECK(exists);
        CHECK_OK(caterva_meta_get(ctx, arr, name, &got));
    }
    CHECK(strcmp(got.name, name) == 0);
    CHECK(got.size == size);
    CHECK(memcmp(got.sdata, data, (size_t)size) == 0);
    free(got.name);
    free(got.sdata);
    return 0;
}

bool m_busy_axis(int8_t ndim, int i, int round) {
    if (ndim <= 2) {
        return true;
    }
    if (ndim <= 4) {
        return i % 3 == round % 3;
    }
    /* The first, the middle and the last axis. */
    int axis = round % 3 == 0 ? 0 : round % 3 == 1 ? ndim / 2 : ndim - 1;
    return i == axis;
}

bool m_skip(const test_case_t *tc) {
    int8_t ndim = tc->shape.ndim;
    uint8_t is = tc->itemsize;
    return h_skip_disk_itemsize(tc) || (ndim >= 4 && is != 1 && (is != 8 || tc->backend.persistent)) ||
           (ndim >= 5 && (is != 1 || tc->backend.persistent));
}

int64_t m_amount(int8_t ndim, int64_t amount) {
    return ndim <= 3 ? amount : 1;
}

static uint8_t KEEP[6] = {'k', 'e', 'e', 'p', 0, 7};
static uint8_t VKEEP[3] = {'v', 'l', 9};

void m_keep_meta(caterva_storage_t *storage) {
    storage->metalayers[0].name = "keep";
    storage->metalayers[0].sdata = KEEP;
    storage->metalayers[0].size = (int32_t)sizeof(KEEP);
    storage->nmetalayers = 1;
}

int m_add_vlmeta(caterva_ctx_t *ctx, caterva_array_t *arr) {
    caterva_metalayer_t vl = {"vkeep", VKEEP, (int32_t)sizeof(VKEEP)};
    CHECK_OK(caterva_vlmeta_add(ctx, arr, &vl));
    return 0;
}

int m_expect_kept(caterva_ctx_t *ctx, caterva_array_t *arr) {
    return m_expect_meta(ctx, arr, "keep", KEEP, (int32_t)sizeof(KEEP), false) ||
           m_expect_meta(ctx, arr, "vkeep", VKEEP, (int32_t)sizeof(VKEEP), true);
}

int fx_setup(fixture_t *f, const test_case_t *tc, const char *tag) {
    memset(f, 0, sizeof(*f));
    CHECK_OK(h_setup(tc, tag, &f->ctx, f->path, &f->params, &f->storage));
    return 0;
}

int fx_create(fixture_t *f, const test_case_t *tc, bool with_meta) {
    f->with_meta = with_meta;
    if (with_meta) {
        m_keep_meta(&f->storage);
    }
    if (m_from_buffer(f->ctx, tc, &f->params, &f->storage, &f->arr, &f->m)) {
        return 1;
    }
    return with_meta ? m_add_vlmeta(f->ctx, f->arr) : 0;
}

int fx_begin(fixture_t *f, const test_case_t *tc, const char *tag, bool with_meta) {
    if (m_skip(tc)) {
        return FX_SKIP;
    }
    return fx_setup(f, tc, tag) || fx_create(f, tc, with_meta);
}

int fx_check(fixture_t *f) {
    return m_check(f->ctx, f->arr, &f->m);
}

int fx_recheck(fixture_t *f) {
    return m_recheck(f->ctx, &f->arr, f->path, &f->m);
}

int fx_end(fixture_t *f) {
    if (f->with_meta && m_expect_kept(f->ctx, f->arr)) {
        return 1;
    }
    return m_finish(&f->ctx, &f->arr, &f->m, f->path);
}

int m_dest(caterva_ctx_t *ctx, const backend_t *b, const char *stem, int8_t ndim, const int32_t *chunk,
           const int32_t *block, char *dpath, caterva_storage_t *ds) {
    snprintf(dpath, 64, "%s%s", stem, b->contiguous ? ".b2frame" : ".b2nd");
    CHECK_OK(caterva_remove(ctx, dpath));
    memset(ds, 0, sizeof(*ds));
    for (int i = 0; i < ndim; i++) {
        ds->chunkshape[i] = chunk[i];
        ds->blockshape[i] = block[i];
    }
    ds->contiguous = b->contiguous;
    ds->urlpath = b->persistent ? dpath : NULL;
    return 0;
}

int m_write_origin(caterva_ctx_t *ctx, caterva_array_t *dst, model_t *dm, uint8_t byte) {
    if (m_nitems(dm) == 0) {
        return 0;
    }
    int64_t z[CATERVA_MAX_DIM] = {0}, one[CATERVA_MAX_DIM] = {0};
    for (int i = 0; i < dm->ndim; i++) {
        one[i] = 1;
    }
    uint8_t item[8];
    memset(item, byte, sizeof(item));
    CHECK_OK(caterva_set_slice_buffer(ctx, item, one, dm->itemsize, z, one, dst));
    dm->v[0] = h_get(item, 0, dm->itemsize);
    return m_check(ctx, dst, dm);
}

int m_drop_dest(caterva_ctx_t *ctx, caterva_array_t **dst, model_t *dm, char *dpath) {
    CHECK_OK(caterva_free(ctx, dst));
    CHECK_OK(caterva_remove(ctx, dpath));
    CHECK(!h_exists(dpath));
    m_free(dm);
    return 0;
}
