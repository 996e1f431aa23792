/* caterva_get_slice: a new array holding src[start:stop] with the storage's
 * partitions and location; it carries the 'caterva' metalayer (with its own
 * geometry) and the storage's user metalayers, none of src's vlmetalayers;
 * interior, whole and empty slices, into every destination storage. */
#include <stdlib.h>

#include "reshape_model.h"

static const char *dest_path(const backend_t *b) {
    return b->contiguous ? "ctest_get_slice_dst.b2frame" : "ctest_get_slice_dst.b2nd";
}

/* Slice src[start:stop] into dest backend db with partitions chunk/block,
 * and check the new array (also after reopening it when on disk). */
static int slice_and_check(caterva_ctx_t *ctx, caterva_array_t *src, const model_t *sm, const int64_t *start,
                           const int64_t *stop, const int32_t *chunk, const int32_t *block, const backend_t *db) {
    char dpath[64];
    snprintf(dpath, sizeof(dpath), "%s", dest_path(db));
    CHECK_OK(caterva_remove(ctx, dpath));
    caterva_storage_t ds;
    memset(&ds, 0, sizeof(ds));
    for (int i = 0; i < sm->ndim; i++) {
        ds.chunkshape[i] = chunk[i];
        ds.blockshape[i] = block[i];
    }
    ds.contiguous = db->contiguous;
    ds.urlpath = db->persistent ? dpath : NULL;
    uint8_t dmeta[3] = {'d', 's', 't'};
    ds.metalayers[0].name = "dmeta";
    ds.metalayers[0].sdata = dmeta;
    ds.metalayers[0].size = 3;
    ds.nmetalayers = 1;

    model_t dm;
    CHECK(m_slice(sm, start, stop, chunk, block, &dm) == 0);
    int64_t start_c[CATERVA_MAX_DIM], stop_c[CATERVA_MAX_DIM];
    memcpy(start_c, start, sizeof(start_c));
    memcpy(stop_c, stop, sizeof(stop_c));
    caterva_array_t *dst = NULL;
    CHECK_OK(caterva_get_slice(ctx, src, start_c, stop_c, &ds, &dst));
    CHECK(dst != NULL && dst != src);
    CHECK(memcmp(start_c, start, sizeof(start_c)) == 0);
    CHECK(memcmp(stop_c, stop, sizeof(stop_c)) == 0);
    if (db->persistent) {
        CHECK(h_exists(dpath));
        CHECK(h_is_dir(dpath) == !db->contiguous);
    }
    for (int pass = 0; pass < 2; pass++) {
        if (m_check(ctx, dst, &dm) || m_check_caterva_meta(ctx, dst, &dm) ||
            m_expect_meta(ctx, dst, "dmeta", dmeta, 3, false)) {
            return 1;
        }
        bool exists = true;
        CHECK_OK(caterva_vlmeta_exists(ctx, dst, "svl", &exists));
        CHECK(!exists);
        if (pass == 0 && m_reopen(ctx, &dst, ds.urlpath)) {
            return 1;
        }
    }
    /* The new array is independent: writing to it leaves src alone (the
     * caller checks src at the end). */
    if (m_nitems(&dm) > 0) {
        int64_t z[CATERVA_MAX_DIM] = {0}, one[CATERVA_MAX_DIM] = {0}, bs[CATERVA_MAX_DIM] = {0};
        for (int i = 0; i < dm.ndim; i++) {
            one[i] = 1;
            bs[i] = 1;
        }
        uint8_t item[8] = {0x5A, 0x5A, 0x5A, 0x5A, 0x5A, 0x5A, 0x5A, 0x5A};
        CHECK_OK(caterva_set_slice_buffer(ctx, item, bs, dm.itemsize, z, one, dst));
        dm.v[0] = h_get(item, 0, dm.itemsize);
        if (m_check(ctx, dst, &dm)) {
            return 1;
        }
    }
    CHECK_OK(caterva_free(ctx, &dst));
    CHECK_OK(caterva_remove(ctx, dpath));
    CHECK(!h_exists(dpath));
    m_free(&dm);
    return 0;
}

static int test_get_slice(const test_case_t *tc) {
    if (m_skip(tc)) {
        return 0;
    }
    caterva_ctx_t *ctx = NULL;
    char path[256];
    caterva_params_t params;
    caterva_storage_t storage;
    CHECK_OK(h_setup(tc, "get_slice_src", &ctx, path, &params, &storage));
    uint8_t smeta[4] = {1, 2, 3, 4};
    storage.metalayers[0].name = "smeta";
    storage.metalayers[0].sdata = smeta;
    storage.metalayers[0].size = 4;
    storage.nmetalayers = 1;
    caterva_array_t *src = NULL;
    model_t sm;
    if (m_from_buffer(ctx, tc, &params, &storage, &src, &sm)) {
        return 1;
    }
    uint8_t svl[5] = {'h', 'e', 'l', 'l', 'o'};
    caterva_metalayer_t vl = {"svl", svl, 5};
    CHECK_OK(caterva_vlmeta_add(ctx, src, &vl));
    int8_t ndim = tc->shape.ndim;
    size_t b = 0;
    while (BACKENDS[b].contiguous != tc->backend.contiguous || BACKENDS[b].persistent != tc->backend.persistent) {
        b++;
    }
    int64_t start[CATERVA_MAX_DIM] = {0}, stop[CATERVA_MAX_DIM] = {0};
    int32_t chunk[CATERVA_MAX_DIM] = {0}, block[CATERVA_MAX_DIM] = {0};

    /* An interior slice with partitions of its own, into the source's
     * storage and the opposite one (in memory / on disk, contiguous or not);
     * the slices below go into the other two. */
    for (int i = 0; i < ndim; i++) {
        start[i] = sm.shape[i] / 3;
        stop[i] = sm.shape[i] - sm.shape[i] / 4;
        if (stop[i] < start[i]) {
            stop[i] = start[i];
        }
        chunk[i] = (int32_t)((stop[i] - start[i]) / 2 + 1);
        block[i] = (chunk[i] + 1) / 2;
    }
    for (size_t k = 0; k < 4; k += 2) {
        size_t d = (b + k) % 4;
        if (slice_and_check(ctx, src, &sm, start, stop, chunk, block, &BACKENDS[d])) {
            fprintf(stderr, "    interior slice into backend %zu\n", d);
            return 1;
        }
    }

    /* The whole array with src's partitions, and with others. */
    for (int i = 0; i < ndim; i++) {
        start[i] = 0;
        stop[i] = sm.shape[i];
        chunk[i] = sm.chunkshape[i];
        block[i] = sm.blockshape[i];
    }
    if (slice_and_check(ctx, src, &sm, start, stop, chunk, block, &BACKENDS[(b + 1) % 4])) {
        fprintf(stderr, "    whole array, same partitions\n");
        return 1;
    }
    for (int i = 0; i < ndim; i++) {
        chunk[i] = (int32_t)(sm.shape[i] / 2 + 1);
        block[i] = chunk[i] > 2 ? 2 : chunk[i];
    }
    if (slice_and_check(ctx, src, &sm, start, stop, chunk, block, &BACKENDS[(b + 2) % 4])) {
        fprintf(stderr, "    whole array, other partitions\n");
        return 1;
    }

    /* An empty slice on the first axis (in the middle of it). */
    if (ndim > 0) {
        for (int i = 0; i < ndim; i++) {
            start[i] = i == 0 ? sm.shape[0] / 2 : 0;
            stop[i] = i == 0 ? start[0] : sm.shape[i];
            chunk[i] = sm.chunkshape[i] > 0 ? sm.chunkshape[i] : 1;
            block[i] = sm.blockshape[i] > 0 ? sm.blockshape[i] : 1;
        }
        if (slice_and_check(ctx, src, &sm, start, stop, chunk, block, &BACKENDS[(b + 3) % 4])) {
            fprintf(stderr, "    empty slice\n");
            return 1;
        }
    }

    /* A single item. */
    if (m_nitems(&sm) > 0) {
        for (int i = 0; i < ndim; i++) {
            start[i] = sm.shape[i] - 1;
            stop[i] = sm.shape[i];
            chunk[i] = 1;
            block[i] = 1;
        }
        if (slice_and_check(ctx, src, &sm, start, stop, chunk, block, &BACKENDS[b])) {
            fprintf(stderr, "    last item\n");
            return 1;
        }
    }

    /* src itself is unchanged, metalayers included. */
    if (m_recheck(ctx, &src, path, &sm) || m_expect_meta(ctx, src, "smeta", smeta, 4, false) ||
        m_expect_meta(ctx, src, "svl", svl, 5, true)) {
        return 1;
    }
    return m_finish(&ctx, &src, &sm, path);
}

void suite_get_slice(void) {
    RUN_ALL_CASES(test_get_slice);
}
