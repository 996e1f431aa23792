/* caterva_get_orthogonal_selection and caterva_set_orthogonal_selection: the
 * outer product of one index list per axis (unsorted, with repeats), read
 * into or written from a C-order buffer whose shape may exceed the
 * selection's; on writes the last occurrence of a repeated index wins. */
#include <stdlib.h>

#include "reshape_model.h"

#define SENTINEL 0xEE
#define MAXSEL 8

typedef struct {
    int64_t idx[CATERVA_MAX_DIM][MAXSEL];
    int64_t size[CATERVA_MAX_DIM];
    int64_t *ptr[CATERVA_MAX_DIM];
} selection_t;

/* An unsorted selection with repeats on every axis: variant 0 picks 6
 * indices, variant 1 picks 8 (4 from 5-D up, to keep the outer product
 * small). Empty axes get none. */
static void make_selection(const model_t *m, int variant, selection_t *s) {
    memset(s, 0, sizeof(*s));
    for (int i = 0; i < m->ndim; i++) {
        int64_t L = m->shape[i];
        s->ptr[i] = s->idx[i];
        if (L == 0) {
            continue;
        }
        int64_t v0[6] = {L - 1, 0, L / 2, L / 2, (2 * L) / 3, L / 3};
        int64_t v1[8] = {1 % L, L - 1, (L + 1) / 4, 0, L - 1, L / 2, (3 * L) / 4, 2 % L};
        s->size[i] = m->ndim >= 5 ? 4 : variant == 0 ? 6 : 8;
        for (int j = 0; j < s->size[i]; j++) {
            s->idx[i][j] = variant == 0 ? v0[j] : v1[j];
        }
    }
}

/* Item of buffer position j (shape bshape), per the selection, in the array. */
static int64_t target_of(const model_t *m, const selection_t *s, const int64_t *j) {
    int64_t a[CATERVA_MAX_DIM];
    for (int i = 0; i < m->ndim; i++) {
        a[i] = s->idx[i][j[i]];
    }
    return h_linear(m->ndim, m->shape, a);
}

/* bshape: the selection's size plus pad on every axis. Returns its item
 * count. */
static int64_t buffer_shape(const model_t *m, const selection_t *s, int64_t pad, int64_t *bshape) {
    for (int i = 0; i < m->ndim; i++) {
        bshape[i] = s->size[i] + pad;
    }
    return h_nitems(m->ndim, bshape);
}

/* Read the selection into a buffer of shape size + pad (per axis) and check
 * every position: selected items, SENTINEL elsewhere. */
static int check_get(caterva_ctx_t *ctx, caterva_array_t *arr, const model_t *m, selection_t *s, int64_t pad) {
    int8_t ndim = m->ndim;
    int64_t bshape[CATERVA_MAX_DIM] = {0};
    int64_t bn = buffer_shape(m, s, pad, bshape);
    int64_t bsize = bn * m->itemsize;
    uint8_t *buf = malloc((size_t)(bsize + m->itemsize));
    CHECK(buf != NULL);
    memset(buf, SENTINEL, (size_t)(bsize + m->itemsize));
    selection_t before = *s;
    int64_t bshape_c[CATERVA_MAX_DIM];
    memcpy(bshape_c, bshape, sizeof(bshape));
    CHECK_OK(caterva_get_orthogonal_selection(ctx, arr, s->ptr, s->size, buf, bshape_c, bsize));
    /* Neither the selection nor the buffer shape change. */
    CHECK(memcmp(before.idx, s->idx, sizeof(s->idx)) == 0 && memcmp(before.size, s->size, sizeof(s->size)) == 0);
    CHECK(memcmp(bshape_c, bshape, sizeof(bshape)) == 0);
    int64_t j[CATERVA_MAX_DIM] = {0};
    if (bn > 0) {
        do {
            bool selected = true;
            for (int i = 0; i < ndim; i++) {
                selected &= j[i] < s->size[i];
            }
            int64_t p = h_linear(ndim, bshape, j);
            if (selected) {
                CHECK(h_get(buf, p, m->itemsize) == m->v[target_of(m, s, j)]);
            } else {
                for (int k = 0; k < m->itemsize; k++) {
                    CHECK(buf[p * m->itemsize + k] == SENTINEL);
                }
            }
        } while (h_next_index(ndim, bshape, j));
    }
    for (int k = 0; k < m->itemsize; k++) {
        CHECK(buf[bsize + k] == SENTINEL);
    }
    free(buf);
    return 0;
}

/* Write a buffer of shape size + pad (values from base) through the
 * selection into arr and the model (in C order: the last write wins). */
static int do_set(caterva_ctx_t *ctx, caterva_array_t *arr, model_t *m, selection_t *s, int64_t pad, int64_t base) {
    int8_t ndim = m->ndim;
    int64_t bshape[CATERVA_MAX_DIM] = {0};
    int64_t bn = buffer_shape(m, s, pad, bshape);
    int64_t bsize = bn * m->itemsize;
    uint8_t *buf = malloc((size_t)bsize + 1);
    CHECK(buf != NULL);
    for (int64_t p = 0; p < bn; p++) {
        m_put(buf, p, m->itemsize, h_value(base + p, m->itemsize));
    }
    uint8_t *copy = malloc((size_t)bsize + 1);
    CHECK(copy != NULL);
    memcpy(copy, buf, (size_t)bsize);
    CHECK_OK(caterva_set_orthogonal_selection(ctx, arr, s->ptr, s->size, buf, bshape, bsize));
    CHECK(memcmp(copy, buf, (size_t)bsize) == 0);
    int64_t sshape[CATERVA_MAX_DIM] = {0};
    for (int i = 0; i < ndim; i++) {
        sshape[i] = s->size[i];
    }
    int64_t j[CATERVA_MAX_DIM] = {0};
    if (h_nitems(ndim, sshape) > 0) {
        do {
            m->v[target_of(m, s, j)] = h_get(buf, h_linear(ndim, bshape, j), m->itemsize);
        } while (h_next_index(ndim, sshape, j));
    }
    free(copy);
    free(buf);
    return m_check(ctx, arr, m);
}

static int test_get_orthogonal(const test_case_t *tc) {
    fixture_t f;
    FX_BEGIN(&f, tc, "get_orthogonal", false);
    selection_t s;
    for (int variant = 0; variant < 2; variant++) {
        make_selection(&f.m, variant, &s);
        if (check_get(f.ctx, f.arr, &f.m, &s, 0) || check_get(f.ctx, f.arr, &f.m, &s, 1)) {
            fprintf(stderr, "    selection variant %d\n", variant);
            return 1;
        }
    }
    /* One index per axis (a single item), and an empty selection on the
     * first axis (nothing read). */
    if (m_nitems(&f.m) > 0) {
        make_selection(&f.m, 0, &s);
        for (int i = 0; i < f.m.ndim; i++) {
            s.size[i] = 1;
        }
        if (check_get(f.ctx, f.arr, &f.m, &s, 2)) {
            return 1;
        }
    }
    if (f.m.ndim > 0) {
        make_selection(&f.m, 1, &s);
        s.size[0] = 0;
        if (check_get(f.ctx, f.arr, &f.m, &s, 0) || check_get(f.ctx, f.arr, &f.m, &s, 1)) {
            return 1;
        }
    }
    /* The same from the array reopened from disk. */
    if (m_reopen(f.ctx, &f.arr, f.path)) {
        return 1;
    }
    make_selection(&f.m, 1, &s);
    if (check_get(f.ctx, f.arr, &f.m, &s, 1)) {
        return 1;
    }
    return fx_end(&f);
}

static int test_set_orthogonal(const test_case_t *tc) {
    fixture_t f;
    FX_BEGIN(&f, tc, "set_orthogonal", false);
    selection_t s;
    make_selection(&f.m, 0, &s);
    if (do_set(f.ctx, f.arr, &f.m, &s, 0, 3000) || check_get(f.ctx, f.arr, &f.m, &s, 0)) {
        return 1;
    }
    make_selection(&f.m, 1, &s);
    if (do_set(f.ctx, f.arr, &f.m, &s, 1, 7000) || check_get(f.ctx, f.arr, &f.m, &s, 0)) {
        return 1;
    }
    /* An empty selection on one axis writes nothing. */
    if (f.m.ndim > 0) {
        s.size[f.m.ndim - 1] = 0;
        if (do_set(f.ctx, f.arr, &f.m, &s, 0, 9000)) {
            return 1;
        }
    }
    if (fx_recheck(&f)) {
        return 1;
    }
    /* A write into the reopened array persists too. */
    make_selection(&f.m, 0, &s);
    if (do_set(f.ctx, f.arr, &f.m, &s, 0, 11000) || fx_recheck(&f)) {
        return 1;
    }
    return fx_end(&f);
}

/* Writing with repeated indices: of the buffer positions that hit one item,
 * the one with the largest position on every axis wins (spelled out on a
 * 2-D array, independently of the model's replay). */
static int test_set_orthogonal_repeats(const test_case_t *tc) {
    if (tc->backend.persistent || tc->itemsize != 4) {
        return 0;
    }
    fixture_t f;
    CHECK(fx_setup(&f, tc, "set_orthogonal_repeats") == 0);
    CHECK_OK(caterva_zeros(f.ctx, &f.params, &f.storage, &f.arr));
    int64_t rows[4] = {3, 1, 3, 3};
    int64_t cols[3] = {2, 2, 0};
    int64_t *sel[2] = {rows, cols};
    int64_t size[2] = {4, 3};
    int64_t bshape[2] = {4, 3};
    int32_t buf[12];
    for (int k = 0; k < 12; k++) {
        buf[k] = 100 + k; /* position (r, c) holds 100 + 3r + c */
    }
    CHECK_OK(caterva_set_orthogonal_selection(f.ctx, f.arr, sel, size, buf, bshape, (int64_t)sizeof(buf)));
    int32_t all[6 * 5];
    CHECK_OK(caterva_to_buffer(f.ctx, f.arr, all, (int64_t)sizeof(all)));
    for (int r = 0; r < 6; r++) {
        for (int c = 0; c < 5; c++) {
            int32_t expected = 0;
            /* Row 3 last at position 3, row 1 at 1; column 2 last at 1, column 0 at 2. */
            int jr = r == 3 ? 3 : r == 1 ? 1 : -1;
            int jc = c == 2 ? 1 : c == 0 ? 2 : -1;
            if (jr >= 0 && jc >= 0) {
                expected = 100 + 3 * jr + jc;
            }
            CHECK(all[r * 5 + c] == expected);
        }
    }
    CHECK_OK(caterva_free(f.ctx, &f.arr));
    CHECK_OK(caterva_ctx_free(&f.ctx));
    return 0;
}

void suite_orthogonal(void) {
    static const shape_case_t small = {2, {6, 5}, {4, 2}, {2, 2}};
    RUN_ALL_CASES(test_get_orthogonal);
    RUN_ALL_CASES(test_set_orthogonal);
    m_run_shape("test_set_orthogonal_repeats", test_set_orthogonal_repeats, &small);
}
