/*
 * A reference model for the suites that change an array's shape (resize,
 * insert, append, delete, squeeze) or make new arrays from one (get_slice,
 * copy, orthogonal selections): the expected geometry and every item's value,
 * computed in plain C, and a check of a real array against it.
 */
#ifndef CATERVA_CTESTS_RESHAPE_MODEL_H
#define CATERVA_CTESTS_RESHAPE_MODEL_H

#include "harness.h"

typedef struct {
    uint8_t itemsize;
    int8_t ndim;
    int64_t shape[CATERVA_MAX_DIM];
    int32_t chunkshape[CATERVA_MAX_DIM];
    int32_t blockshape[CATERVA_MAX_DIM];
    /* Item values in C order, truncated to itemsize bytes. */
    uint64_t *v;
} model_t;

/* The model of an array of tc's shape made from h_fill_buffer (item i holds
 * h_value(i)). Returns 0 on success. */
int m_init(model_t *m, const test_case_t *tc);

/* The same shape with every item equal to value. */
int m_init_value(model_t *m, const test_case_t *tc, uint64_t value);

void m_free(model_t *m);

int64_t m_nitems(const model_t *m);

/* v truncated to itemsize bytes. */
uint64_t m_trunc(uint64_t v, uint8_t itemsize);

/* Write v (truncated) as item i of buf, little endian. */
void m_put(void *buf, int64_t i, uint8_t itemsize, uint64_t v);

/* A C-order buffer of k slabs along axis (the model's shape with k on axis),
 * item j holding h_value(base + j); *nbytes receives its size. NULL when out
 * of memory. Free with free(). */
uint8_t *m_slab(const model_t *m, int axis, int64_t k, int64_t base, int64_t *nbytes);

/* Insert k hyperplanes at pos along axis, taken from slab (m_slab's layout),
 * or zeros when slab is NULL. */
int m_insert(model_t *m, int axis, int64_t pos, int64_t k, const uint8_t *slab);

/* Remove the hyperplanes [pos, pos + len) along axis. */
int m_delete(model_t *m, int axis, int64_t pos, int64_t len);

/* caterva_resize's semantics: per axis, a grow inserts zeros at start[i]
 * (NULL: at the end), a shrink removes items from start[i] (NULL: the last ones). */
int m_resize(model_t *m, const int64_t *new_shape, const int64_t *start);

/* Drop the axes flagged in index (their length must be 1). */
int m_squeeze(model_t *m, const bool *index);

/* The model of src[start:stop] with other partitions. */
int m_slice(const model_t *src, const int64_t *start, const int64_t *stop, const int32_t *chunkshape,
            const int32_t *blockshape, model_t *out);

/* Check every public field of arr and every item (via caterva_to_buffer)
 * against the model. Returns 0 when they match. */
int m_check(caterva_ctx_t *ctx, caterva_array_t *arr, const model_t *m);

/* For a persistent array (path non-empty): free it and open it again from
 * path. A no-op in memory. */
int m_reopen(caterva_ctx_t *ctx, caterva_array_t **arr, const char *path);

/* Check the array as a new reader sees it: on disk (path non-empty), free
 * it, open it again from path and m_check it; in memory, m_check it and, when
 * it is a contiguous frame, a copy made from that frame (caterva_to_cframe
 * and caterva_from_cframe), whose metalayer must describe the current
 * geometry. */
int m_recheck(caterva_ctx_t *ctx, caterva_array_t **arr, const char *path, const model_t *m);

/* The 'caterva' metalayer of arr records the model's geometry. */
int m_check_caterva_meta(caterva_ctx_t *ctx, caterva_array_t *arr, const model_t *m);

/* Whether a growing test changes axis i of an ndim-dim array in round
 * 0, 1 or 2: every axis up to 2-D; in 3-D and 4-D one axis in three per
 * round; from 5-D on, one axis per round (the first, the middle, the last),
 * so that the arrays stay small and the runs short. */
bool m_busy_axis(int8_t ndim, int i, int round);

/* Whether to skip a case to save time (arrays of many small chunks are slow
 * to rewrite): h_skip_disk_itemsize's cases; 4-D shapes run with itemsizes 1
 * and 8 in memory and 1 on disk; 5-D and 6-D shapes with itemsize 1 in memory
 * only. The reshaping geometry depends on neither the itemsize nor the
 * storage, and the storage layer not on ndim: all itemsizes still run up to
 * 3-D, and all storages up to 4-D. */
bool m_skip(const test_case_t *tc);

/* How much a growing test adds to an axis: amount up to 3-D, 1 beyond (the
 * arrays of many small chunks get slow to rewrite). */
int64_t m_amount(int8_t ndim, int64_t amount);

/* arr has the (vl when vl) metalayer name with these size bytes. */
int m_expect_meta(caterva_ctx_t *ctx, caterva_array_t *arr, const char *name, const uint8_t *data, int32_t size,
                  bool vl);

/* Give storage the user metalayer "keep" before creating the array;
 * after creating it, add the vlmetalayer "vkeep" with m_add_vlmeta; at the
 * end, m_expect_kept checks that both are still there, unchanged. */
void m_keep_meta(caterva_storage_t *storage);
int m_add_vlmeta(caterva_ctx_t *ctx, caterva_array_t *arr);
int m_expect_kept(caterva_ctx_t *ctx, caterva_array_t *arr);

/* Make an array of tc's shape from h_fill_buffer's values with params and
 * storage (from h_setup), its model in *m, and check it. */
int m_from_buffer(caterva_ctx_t *ctx, const test_case_t *tc, caterva_params_t *params, caterva_storage_t *storage,
                  caterva_array_t **arr, model_t *m);

/* The end of a case: free the array, remove path (when non-empty) and check
 * it is gone, free the model and the context. */
int m_finish(caterva_ctx_t **ctx, caterva_array_t **arr, model_t *m, char *path);

/* The destination of a new array (get_slice, copy) on backend b: dpath (64
 * bytes) gets stem with b's extension (.b2frame contiguous, .b2nd not) and is
 * removed if it exists; ds gets partitions chunk/block on ndim axes, b's
 * layout and, when b is persistent, dpath as urlpath. Returns 0 on success. */
int m_dest(caterva_ctx_t *ctx, const backend_t *b, const char *stem, int8_t ndim, const int32_t *chunk,
           const int32_t *block, char *dpath, caterva_storage_t *ds);

/* A new array dst (model dm) is independent of its source: write the item
 * of bytes byte at its origin (when it has items) and check dst against dm
 * changed the same way. */
int m_write_origin(caterva_ctx_t *ctx, caterva_array_t *dst, model_t *dm, uint8_t byte);

/* Free dst and dm, remove dpath and check it is gone. */
int m_drop_dest(caterva_ctx_t *ctx, caterva_array_t **dst, model_t *dm, char *dpath);

/* A case's array and its model with what made them: the context, the path
 * (empty in memory), params and storage from h_setup. */
typedef struct {
    caterva_ctx_t *ctx;
    char path[256];
    caterva_params_t params;
    caterva_storage_t storage;
    caterva_array_t *arr;
    model_t m;
    /* The array carries m_keep_meta's metalayers (fx_end checks them). */
    bool with_meta;
} fixture_t;

/* fx_begin's value for a case that m_skip skips. */
#define FX_SKIP 2

/* h_setup for tc (no array yet). Returns 0 on success. */
int fx_setup(fixture_t *f, const test_case_t *tc, const char *tag);

/* The array and its model from m_from_buffer with f's params and storage;
 * with_meta: with m_keep_meta's metalayer and m_add_vlmeta's vlmetalayer.
 * Returns 0 on success. */
int fx_create(fixture_t *f, const test_case_t *tc, bool with_meta);

/* The usual start of a case: FX_SKIP when m_skip(tc), else fx_setup and
 * fx_create; 0 on success, 1 on failure. */
int fx_begin(fixture_t *f, const test_case_t *tc, const char *tag, bool with_meta);

/* fx_begin, returning from the calling case on a skip (0) or failure (1). */
#define FX_BEGIN(f, tc, tag, with_meta)                       \
    do {                                                      \
        int fx_rc_ = fx_begin((f), (tc), (tag), (with_meta)); \
        if (fx_rc_ != 0) {                                    \
            return fx_rc_ == FX_SKIP ? 0 : 1;                 \
        }                                                     \
    } while (0)

/* m_check and m_recheck of f's array against its model. */
int fx_check(fixture_t *f);
int fx_recheck(fixture_t *f);

/* The end of a case: the kept metalayers survive (when with_meta), then
 * m_finish. */
int fx_end(fixture_t *f);

/* Run fn over every itemsize and backend with a shape of its own. */
void m_run_shape(const char *name, int (*fn)(const test_case_t *), const shape_case_t *shape);

#endif
