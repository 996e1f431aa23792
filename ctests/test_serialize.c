/* caterva_serialize_meta / caterva_deserialize_meta: the msgpack encoding of
 * the 'caterva' metalayer. */
#include <stdlib.h>

#include "harness.h"

static const uint8_t EXAMPLE[44] = {
    0x95, 0x00, 0x02, 0x92, 0xd3, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0xd3, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x92, 0xd2, 0x00, 0x00, 0x00, 0x06, 0xd2, 0x00,
    0x00, 0x00, 0x06, 0x92, 0xd2, 0x00, 0x00, 0x00, 0x04, 0xd2, 0x00, 0x00, 0x00, 0x04,
};

/* The expected encoding, built by hand: fixarray(5) [version 0, ndim,
 * fixarray(ndim) of int64, fixarray(ndim) of int32, fixarray(ndim) of int32],
 * big-endian. Returns the length. */
static int32_t encode(int8_t ndim, const int64_t *shape, const int32_t *chunk, const int32_t *block, uint8_t *out) {
    uint8_t *p = out;
    *p++ = 0x95;
    *p++ = 0x00;
    *p++ = (uint8_t)ndim;
    *p++ = (uint8_t)(0x90 + ndim);
    for (int i = 0; i < ndim; i++) {
        *p++ = 0xd3;
        for (int k = 7; k >= 0; k--) {
            *p++ = (uint8_t)((uint64_t)shape[i] >> (8 * k));
        }
    }
    for (int w = 0; w < 2; w++) {
        const int32_t *v = w == 0 ? chunk : block;
        *p++ = (uint8_t)(0x90 + ndim);
        for (int i = 0; i < ndim; i++) {
            *p++ = 0xd2;
            for (int k = 3; k >= 0; k--) {
                *p++ = (uint8_t)((uint32_t)v[i] >> (8 * k));
            }
        }
    }
    return (int32_t)(p - out);
}

static int test_serialize_example(const test_case_t *tc) {
    (void)tc;
    int64_t shape[CATERVA_MAX_DIM] = {10, 10};
    int32_t chunk[CATERVA_MAX_DIM] = {6, 6};
    int32_t block[CATERVA_MAX_DIM] = {4, 4};
    uint8_t *smeta = NULL;
    int32_t len = caterva_serialize_meta(2, shape, chunk, block, &smeta);
    CHECK(len == 44);
    CHECK(smeta != NULL);
    CHECK(memcmp(smeta, EXAMPLE, 44) == 0);
    /* The inputs are not modified. */
    CHECK(shape[0] == 10 && shape[1] == 10 && chunk[0] == 6 && block[1] == 4);

    /* The hand-built encoder agrees (so the other tests can rely on it). */
    uint8_t mine[256];
    CHECK(encode(2, shape, chunk, block, mine) == 44);
    CHECK(memcmp(mine, EXAMPLE, 44) == 0);

    int8_t ndim = -1;
    int64_t s[CATERVA_MAX_DIM];
    int32_t c[CATERVA_MAX_DIM], b[CATERVA_MAX_DIM];
    for (int i = 0; i < CATERVA_MAX_DIM; i++) {
        s[i] = -7;
        c[i] = -7;
        b[i] = -7;
    }
    CHECK(caterva_deserialize_meta(smeta, len, &ndim, s, c, b) == 44);
    CHECK(ndim == 2);
    CHECK(s[0] == 10 && s[1] == 10);
    CHECK(c[0] == 6 && c[1] == 6);
    CHECK(b[0] == 4 && b[1] == 4);
    /* The input buffer is not modified. */
    CHECK(memcmp(smeta, EXAMPLE, 44) == 0);
    free(smeta);

    /* Bytes after the encoding are not read: the return value is still 44. */
    uint8_t longer[50];
    memcpy(longer, EXAMPLE, 44);
    memset(longer + 44, 0xC1, 6);
    ndim = -1;
    CHECK(caterva_deserialize_meta(longer, 50, &ndim, s, c, b) == 44);
    CHECK(ndim == 2 && s[1] == 10 && c[1] == 6 && b[1] == 4);
    return 0;
}

/* Round trip for every ndim 0..8, with values that use every byte. */
static int test_serialize_roundtrip(const test_case_t *tc) {
    (void)tc;
    for (int8_t nd = 0; nd <= CATERVA_MAX_DIM; nd++) {
        int64_t shape[CATERVA_MAX_DIM];
        int32_t chunk[CATERVA_MAX_DIM], block[CATERVA_MAX_DIM];
        for (int i = 0; i < CATERVA_MAX_DIM; i++) {
            shape[i] = i < nd ? (int64_t)0x0102030405060708LL * (i + 1) + (i % 2 ? 0 : 255) : 999;
            chunk[i] = i < nd ? 0x01020304 + 1000 * i : 999;
            block[i] = i < nd ? 1 + i * 300 : 999;
        }
        if (nd > 0) {
            shape[0] = 0; /* an empty axis */
            chunk[0] = 0;
            block[0] = 0;
        }
        uint8_t *smeta = NULL;
        int32_t len = caterva_serialize_meta(nd, shape, chunk, block, &smeta);
        uint8_t expected[256];
        int32_t elen = encode(nd, shape, chunk, block, expected);
        CHECK(elen == 6 + 19 * nd);
        CHECK(len == elen);
        CHECK(smeta != NULL && memcmp(smeta, expected, (size_t)len) == 0);

        int8_t ndim = -1;
        int64_t s[CATERVA_MAX_DIM];
        int32_t c[CATERVA_MAX_DIM], b[CATERVA_MAX_DIM];
        for (int i = 0; i < CATERVA_MAX_DIM; i++) {
            s[i] = -7;
            c[i] = -7;
            b[i] = -7;
        }
        CHECK(caterva_deserialize_meta(smeta, len, &ndim, s, c, b) == len);
        CHECK(ndim == nd);
        for (int i = 0; i < nd; i++) {
            CHECK(s[i] == shape[i]);
            CHECK(c[i] == chunk[i]);
            CHECK(b[i] == block[i]);
        }
        free(smeta);
    }
    return 0;
}

/* The 'caterva' metalayer of a new array is the serialisation of its geometry. */
static int test_serialize_matches_array(const test_case_t *tc) {
    (void)tc;
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));

    /* The example of the format. */
    caterva_params_t params = {0};
    caterva_storage_t storage = {0};
    params.itemsize = 8;
    params.ndim = 2;
    params.shape[0] = 10;
    params.shape[1] = 10;
    storage.chunkshape[0] = 6;
    storage.chunkshape[1] = 6;
    storage.blockshape[0] = 4;
    storage.blockshape[1] = 4;
    caterva_array_t *arr = NULL;
    CHECK_OK(caterva_zeros(ctx, &params, &storage, &arr));
    caterva_metalayer_t m = {NULL, NULL, 0};
    CHECK_OK(caterva_meta_get(ctx, arr, "caterva", &m));
    CHECK(strcmp(m.name, "caterva") == 0);
    CHECK(m.size == 44);
    CHECK(memcmp(m.sdata, EXAMPLE, 44) == 0);
    free(m.name);
    free(m.sdata);
    /* print_meta reads the same layer (its text goes to stdout). */
    CHECK_OK(caterva_print_meta(arr));
    fflush(stdout);
    CHECK_OK(caterva_free(ctx, &arr));

    /* Every shape of the shared table. */
    for (size_t k = 0; k < NSHAPES; k++) {
        test_case_t c = {2, SHAPES[k], BACKENDS[k % 2]};
        h_fill(&c, &params, &storage, NULL);
        CHECK_OK(caterva_zeros(ctx, &params, &storage, &arr));
        CHECK_OK(caterva_meta_get(ctx, arr, "caterva", &m));
        uint8_t *smeta = NULL;
        int32_t len = caterva_serialize_meta(SHAPES[k].ndim, params.shape, storage.chunkshape,
                                             storage.blockshape, &smeta);
        CHECK(len > 0);
        CHECK(m.size == len);
        CHECK(memcmp(m.sdata, smeta, (size_t)len) == 0);
        /* Decoding the array's layer gives the array's geometry. */
        int8_t ndim = -1;
        int64_t s[CATERVA_MAX_DIM] = {0};
        int32_t ch[CATERVA_MAX_DIM] = {0}, bl[CATERVA_MAX_DIM] = {0};
        CHECK(caterva_deserialize_meta(m.sdata, m.size, &ndim, s, ch, bl) == len);
        CHECK(ndim == arr->ndim);
        for (int i = 0; i < ndim; i++) {
            CHECK(s[i] == arr->shape[i] && ch[i] == arr->chunkshape[i] && bl[i] == arr->blockshape[i]);
        }
        free(smeta);
        free(m.name);
        free(m.sdata);
        CHECK_OK(caterva_free(ctx, &arr));
    }
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* Every truncated prefix is refused with a negative value, outputs untouched. */
static int test_deserialize_truncated(const test_case_t *tc) {
    (void)tc;
    uint8_t copy[44];
    for (int32_t len = 0; len < 44; len++) {
        /* A buffer of exactly len bytes, so a read past it would be caught by sanitizers. */
        uint8_t *buf = malloc(len > 0 ? (size_t)len : 1);
        CHECK(buf != NULL);
        memcpy(buf, EXAMPLE, (size_t)len);
        memcpy(copy, EXAMPLE, 44);
        int8_t ndim = 77;
        int64_t s[CATERVA_MAX_DIM];
        int32_t c[CATERVA_MAX_DIM], b[CATERVA_MAX_DIM];
        for (int i = 0; i < CATERVA_MAX_DIM; i++) {
            s[i] = -7;
            c[i] = -8;
            b[i] = -9;
        }
        int32_t rc = caterva_deserialize_meta(buf, len, &ndim, s, c, b);
        if (rc >= 0) {
            fprintf(stderr, "    deserialize of a %d-byte prefix returned %d\n", len, rc);
        }
        CHECK(rc < 0);
        CHECK(ndim == 77);
        for (int i = 0; i < CATERVA_MAX_DIM; i++) {
            CHECK(s[i] == -7 && c[i] == -8 && b[i] == -9);
        }
        CHECK(memcmp(buf, copy, (size_t)len) == 0);
        free(buf);
    }
    return 0;
}

/* Other malformed input: an ndim beyond CATERVA_MAX_DIM, and a negative length. */
static int test_deserialize_malformed(const test_case_t *tc) {
    (void)tc;
    int8_t ndim = 77;
    int64_t s[CATERVA_MAX_DIM] = {0};
    int32_t c[CATERVA_MAX_DIM] = {0}, b[CATERVA_MAX_DIM] = {0};

    /* A well-formed encoding of 9 dimensions would overflow the outputs. */
    int64_t shape9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    int32_t one9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    uint8_t enc[256];
    int32_t len = encode(9, shape9, one9, one9, enc);
    CHECK(caterva_deserialize_meta(enc, len, &ndim, s, c, b) < 0);
    CHECK(ndim == 77);
    for (int i = 0; i < CATERVA_MAX_DIM; i++) {
        CHECK(s[i] == 0 && c[i] == 0 && b[i] == 0);
    }

    uint8_t ok[44];
    memcpy(ok, EXAMPLE, 44);
    CHECK(caterva_deserialize_meta(ok, -1, &ndim, s, c, b) < 0);
    CHECK(ndim == 77 && s[0] == 0);
    return 0;
}

/* serialize_meta refuses a bad ndim and NULL pointers with a negative code. */
static int test_serialize_bad_input(const test_case_t *tc) {
    (void)tc;
    int64_t shape[CATERVA_MAX_DIM + 1] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    int32_t chunk[CATERVA_MAX_DIM + 1] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    uint8_t *smeta = (uint8_t *)&shape;
    CHECK(caterva_serialize_meta(9, shape, chunk, chunk, &smeta) < 0);
    CHECK(smeta == (uint8_t *)&shape);
    CHECK(caterva_serialize_meta(-1, shape, chunk, chunk, &smeta) < 0);
    CHECK(smeta == (uint8_t *)&shape);
    CHECK(caterva_serialize_meta(2, NULL, chunk, chunk, &smeta) == -CATERVA_ERR_NULL_POINTER);
    CHECK(caterva_serialize_meta(2, shape, NULL, chunk, &smeta) == -CATERVA_ERR_NULL_POINTER);
    CHECK(caterva_serialize_meta(2, shape, chunk, NULL, &smeta) == -CATERVA_ERR_NULL_POINTER);
    CHECK(caterva_serialize_meta(2, shape, chunk, chunk, NULL) == -CATERVA_ERR_NULL_POINTER);
    CHECK(smeta == (uint8_t *)&shape);

    uint8_t buf[44];
    memcpy(buf, EXAMPLE, 44);
    int8_t ndim = 77;
    int64_t s[CATERVA_MAX_DIM] = {0};
    int32_t c[CATERVA_MAX_DIM] = {0}, b[CATERVA_MAX_DIM] = {0};
    CHECK(caterva_deserialize_meta(NULL, 44, &ndim, s, c, b) == -CATERVA_ERR_NULL_POINTER);
    CHECK(caterva_deserialize_meta(buf, 44, NULL, s, c, b) == -CATERVA_ERR_NULL_POINTER);
    CHECK(caterva_deserialize_meta(buf, 44, &ndim, NULL, c, b) == -CATERVA_ERR_NULL_POINTER);
    CHECK(caterva_deserialize_meta(buf, 44, &ndim, s, NULL, b) == -CATERVA_ERR_NULL_POINTER);
    CHECK(caterva_deserialize_meta(buf, 44, &ndim, s, c, NULL) == -CATERVA_ERR_NULL_POINTER);
    CHECK(ndim == 77 && s[0] == 0 && c[0] == 0 && b[0] == 0);
    return 0;
}

void suite_serialize(void) {
    RUN_CASE(test_serialize_example);
    RUN_CASE(test_serialize_roundtrip);
    RUN_CASE(test_serialize_matches_array);
    RUN_CASE(test_deserialize_truncated);
    RUN_CASE(test_deserialize_malformed);
    RUN_CASE(test_serialize_bad_input);
}
