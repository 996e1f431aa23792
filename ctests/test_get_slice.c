/* caterva_get_slice: a new array holding src[start:stop] with the storage's
 * partitions and location; it carries the 'caterva' metalayer (with its own
 * geometry) and the storage's user metalayers, none of src's vlmetalayers;
 * interior, whole and empty slices, into every destination storage. */
#include <stdlib.h>

#include "reshape_model.h"

/* Slice src[start:stop] into dest backend db with partitions chunk/block,
 * and check the new array (also after reopening it when on disk). */
static int slice_and_check(caterva_ctx_t *ctx, caterva_array_t *src, const model_t *sm, const int64_t *start,
                           const int64_t *stop, const int32_t *chunk, const int32_t *block, const backend_t *db) {
    char dpath[64];
    caterva_storage_t ds;
    CHECK(m_dest(ctx, db, "ctest_get_slice_dst", sm->ndim, chunk, block, dpath, &ds) == 0);
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
    if (m_write_origin(ctx, dst, &dm, 0x5A)) {
        return 1;
    }
    return m_drop_dest(ctx, &dst, &dm, dpath);
}

static int test_get_slice(const test_case_t *tc) {
    if (m_skip(tc)) {
        return 0;
    }
    fixture_t f;
    CHECK(fx_setup(&f, tc, "get_slice_src") == 0);
    uint8_t smeta[4] = {1, 2, 3, 4};
    f.storage.metalayers[0].name = "smeta";
    f.storage.metalayers[0].sdata = smeta;
    f.storage.metalayers[0].size = 4;
    f.storage.nmetalayers = 1;
    if (fx_create(&f, tc, false)) {
        return 1;
    }
    uint8_t svl[5] = {'h', 'e', 'l', 'l', 'o'};
    caterva_metalayer_t vl = {"svl", svl, 5};
    CHECK_OK(caterva_vlmeta_add(f.ctx, f.arr, &vl));
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
        start[i] = f.m.shape[i] / 3;
        stop[i] = f.m.shape[i] - f.m.shape[i] / 4;
        if (stop[i] < start[i]) {
            stop[i] = start[i];
        }
        chunk[i] = (int32_t)((stop[i] - start[i]) / 2 + 1);
        block[i] = (chunk[i] + 1) / 2;
    }
    for (size_t k = 0; k < 4; k += 2) {
        size_t d = (b + k) % 4;
        if (slice_and_check(f.ctx, f.arr, &f.m, start, stop, chunk, block, &BACKENDS[d])) {
            fprintf(stderr, "    interior slice into backend %zu\n", d);
            return 1;
        }
    }

    /* The whole array with src's partitions, and with others. */
    for (int i = 0; i < ndim; i++) {
        start[i] = 0;
        stop[i] = f.m.shape[i];
        chunk[i] = f.m.chunkshape[i];
        block[i] = f.m.blockshape[i];
    }
    if (slice_and_check(f.ctx, f.arr, &f.m, start, stop, chunk, block, &BACKENDS[(b + 1) % 4])) {
        fprintf(stderr, "    whole array, same partitions\n");
        return 1;
    }
    for (int i = 0; i < ndim; i++) {
        chunk[i] = (int32_t)(f.m.shape[i] / 2 + 1);
        block[i] = chunk[i] > 2 ? 2 : chunk[i];
    }
    if (slice_and_check(f.ctx, f.arr, &f.m, start, stop, chunk, block, &BACKENDS[(b + 2) % 4])) {
        fprintf(stderr, "    whole array, other partitions\n");
        return 1;
    }

    /* An empty slice on the first axis (in the middle of it). */
    if (ndim > 0) {
        for (int i = 0; i < ndim; i++) {
            start[i] = i == 0 ? f.m.shape[0] / 2 : 0;
            stop[i] = i == 0 ? start[0] : f.m.shape[i];
            chunk[i] = f.m.chunkshape[i] > 0 ? f.m.chunkshape[i] : 1;
            block[i] = f.m.blockshape[i] > 0 ? f.m.blockshape[i] : 1;
        }
        if (slice_and_check(f.ctx, f.arr, &f.m, start, stop, chunk, block, &BACKENDS[(b + 3) % 4])) {
            fprintf(stderr, "    empty slice\n");
            return 1;
        }
    }

    /* A single item. */
    if (m_nitems(&f.m) > 0) {
        for (int i = 0; i < ndim; i++) {
            start[i] = f.m.shape[i] - 1;
            stop[i] = f.m.shape[i];
            chunk[i] = 1;
            block[i] = 1;
        }
        if (slice_and_check(f.ctx, f.arr, &f.m, start, stop, chunk, block, &BACKENDS[b])) {
            fprintf(stderr, "    last item\n");
            return 1;
        }
    }

    /* src itself is unchanged, metalayers included. */
    if (fx_recheck(&f) || m_expect_meta(f.ctx, f.arr, "smeta", smeta, 4, false) ||
        m_expect_meta(f.ctx, f.arr, "svl", svl, 5, true)) {
        return 1;
    }
    return m_finish(&f.ctx, &f.arr, &f.m, f.path);
}

void suite_get_slice(void) {
    RUN_ALL_CASES(test_get_slice);
}
