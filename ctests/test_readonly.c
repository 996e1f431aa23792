/*
 * Read-only handles (issue 24): an array opened at an offset of a larger file
 * (caterva_open_offset) lies inside someone else's bytes. Every public function
 * that changes an array is called on every kind of such handle, and each must
 * refuse with CATERVA_ERR_INVALID_STORAGE, leave the file byte for byte as it
 * was, and leave the handle reading what it read before. (expand_dims on the
 * first frame of a file once replaced the whole file with that one frame.)
 *
 * Also here, the other C-visible defects of issue 24: a vlmetalayer of zeros
 * (which c-blosc2 stores as a special chunk) that made every later open fail,
 * metadata too large to reopen refused at write, a symbolic link at the lock
 * file's path (opens spun forever), and unregistered codec and filter ids.
 */
#define _DEFAULT_SOURCE /* symlink, lstat */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

#define N 30

typedef struct {
    caterva_ctx_t *ctx;
    caterva_array_t *ro;
    caterva_array_t *other; /* an in-memory array of the same shape */
} ro_t;

typedef int (*probe_fn)(ro_t *r);

static int p_set_slice(ro_t *r) {
    int64_t v = 7, start = 0, stop = 1, shape = 1;
    return caterva_set_slice_buffer(r->ctx, &v, &shape, 8, &start, &stop, r->ro);
}
static int p_set_orthogonal(ro_t *r) {
    int64_t sel0[1] = {0}, *sel[1] = {sel0}, size[1] = {1}, v = 7, shape = 1;
    return caterva_set_orthogonal_selection(r->ctx, r->ro, sel, size, &v, &shape, 8);
}
static int p_resize_grow(ro_t *r) {
    int64_t shape[1] = {N + 20};
    return caterva_resize(r->ctx, r->ro, shape, NULL);
}
static int p_resize_shrink(ro_t *r) {
    int64_t shape[1] = {N - 5};
    return caterva_resize(r->ctx, r->ro, shape, NULL);
}
static int p_insert(ro_t *r) {
    int64_t v[2] = {1, 2};
    return caterva_insert(r->ctx, r->ro, v, sizeof(v), 0, 3);
}
static int p_append(ro_t *r) {
    int64_t v[2] = {1, 2};
    return caterva_append(r->ctx, r->ro, v, sizeof(v), 0);
}
static int p_delete(ro_t *r) { return caterva_delete(r->ctx, r->ro, 0, 2, 3); }
static int p_expand_dims0(ro_t *r) { return caterva_expand_dims(r->ctx, r->ro, 0); }
static int p_expand_dims1(ro_t *r) { return caterva_expand_dims(r->ctx, r->ro, 1); }
static int p_expand_then_squeeze(ro_t *r) {
    /* Refused already at expand_dims; squeeze of the 1-d array has nothing to do. */
    int rc = caterva_expand_dims(r->ctx, r->ro, 0);
    return rc != CATERVA_SUCCEED ? rc : caterva_squeeze(r->ctx, r->ro);
}
static int p_vlmeta_add(ro_t *r) {
    uint8_t c[3] = {1, 2, 3};
    caterva_metalayer_t m = {.name = "new", .sdata = c, .size = 3};
    return caterva_vlmeta_add(r->ctx, r->ro, &m);
}
static int p_vlmeta_update(ro_t *r) {
    uint8_t c[3] = {1, 2, 3};
    caterva_metalayer_t m = {.name = "note", .sdata = c, .size = 3};
    return caterva_vlmeta_update(r->ctx, r->ro, &m);
}
static int p_meta_update(ro_t *r) {
    uint8_t c[2] = {9, 9};
    caterva_metalayer_t m = {.name = "user", .sdata = c, .size = 2};
    return caterva_meta_update(r->ctx, r->ro, &m);
}
static int p_set_dtype(ro_t *r) { return caterva_set_dtype(r->ctx, r->ro, "<i8"); }
static int p_enable_checksums(ro_t *r) { return caterva_enable_checksums(r->ctx, r->ro); }
static int p_append_array(ro_t *r) { return caterva_append_array(r->ctx, r->ro, r->other, 0); }
static int p_save_onto_itself(ro_t *r) { return caterva_save(r->ctx, r->ro, "ctest_ro_pack.bin"); }

static const struct {
    const char *name;
    probe_fn fn;
} PROBES[] = {
    {"set_slice_buffer", p_set_slice},
    {"set_orthogonal_selection", p_set_orthogonal},
    {"resize (grow)", p_resize_grow},
    {"resize (shrink)", p_resize_shrink},
    {"insert", p_insert},
    {"append", p_append},
    {"delete", p_delete},
    {"expand_dims(0)", p_expand_dims0},
    {"expand_dims(1)", p_expand_dims1},
    {"expand_dims then squeeze", p_expand_then_squeeze},
    {"vlmeta_add", p_vlmeta_add},
    {"vlmeta_update", p_vlmeta_update},
    {"meta_update", p_meta_update},
    {"set_dtype", p_set_dtype},
    {"enable_checksums", p_enable_checksums},
    {"append_array", p_append_array},
    {"save onto its own file", p_save_onto_itself},
};

static unsigned char *slurp(const char *path, long *len) {
    FILE *fp = fopen(path, "rb");
    if (fp == NULL) return NULL;
    fseek(fp, 0, SEEK_END);
    *len = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)*len + 1);
    if (buf != NULL && fread(buf, 1, (size_t)*len, fp) != (size_t)*len) {
        free(buf);
        buf = NULL;
    }
    fclose(fp);
    return buf;
}

/* A file of three frames: one at byte 0 (so that the file looks like a frame
 * file), one after it, and one after a few bytes of something else. */
static int make_pack(caterva_ctx_t *ctx, const char *path, int64_t offsets[3], int64_t *v) {
    remove(path);
    caterva_params_t params = {.itemsize = 8, .ndim = 1, .shape = {N}};
    uint8_t user[2] = {1, 2};
    caterva_storage_t storage = {.chunkshape = {7}, .blockshape = {3}, .nmetalayers = 1};
    storage.metalayers[0].name = "user";
    storage.metalayers[0].sdata = user;
    storage.metalayers[0].size = 2;
    caterva_array_t *a;
    CHECK_OK(caterva_from_buffer(ctx, v, N * 8, &params, &storage, &a));
    uint8_t note[1] = {5};
    caterva_metalayer_t m = {.name = "note", .sdata = note, .size = 1};
    CHECK_OK(caterva_vlmeta_add(ctx, a, &m));
    CHECK_OK(caterva_save_append(ctx, a, path, &offsets[0]));
    CHECK_OK(caterva_save_append(ctx, a, path, &offsets[1]));
    FILE *fp = fopen(path, "ab");
    CHECK(fp != NULL && fwrite("host format bytes", 1, 17, fp) == 17 && fclose(fp) == 0);
    CHECK_OK(caterva_save_append(ctx, a, path, &offsets[2]));
    CHECK(offsets[0] == 0 && offsets[1] > 0 && offsets[2] > offsets[1]);
    CHECK_OK(caterva_free(ctx, &a));
    return 0;
}

static int test_every_change_refused(const test_case_t *tc) {
    (void)tc;
    const char *path = "ctest_ro_pack.bin";
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    ro_t r = {0};
    CHECK_OK(caterva_ctx_new(&cfg, &r.ctx));
    int64_t v[N], w[N], offsets[3];
    for (int i = 0; i < N; i++) v[i] = 5 * i - 17;
    if (make_pack(r.ctx, path, offsets, v) != 0) return 1;
    caterva_params_t params = {.itemsize = 8, .ndim = 1, .shape = {N}};
    caterva_storage_t mem = {.chunkshape = {7}, .blockshape = {3}};
    CHECK_OK(caterva_zeros(r.ctx, &params, &mem, &r.other));
    long len0;
    unsigned char *before = slurp(path, &len0);
    CHECK(before != NULL);
    int failed = 0;
    for (int k = 0; k < 3; k++) {
        for (size_t p = 0; p < sizeof(PROBES) / sizeof(PROBES[0]); p++) {
            CHECK_OK(caterva_open_offset(r.ctx, path, offsets[k], &r.ro));
            int rc = PROBES[p].fn(&r);
            long len1;
            unsigned char *after = slurp(path, &len1);
            bool same = after != NULL && len1 == len0 && memcmp(before, after, (size_t)len0) == 0;
            free(after);
            bool reads = r.ro->ndim == 1 && r.ro->shape[0] == N &&
                         caterva_to_buffer(r.ctx, r.ro, w, sizeof(w)) == CATERVA_SUCCEED &&
                         memcmp(v, w, sizeof(v)) == 0;
            if (rc != CATERVA_ERR_INVALID_STORAGE || !same || !reads) {
                fprintf(stderr, "    frame at %" PRId64 ": %s returned %d (want %d), file %s, handle %s\n", offsets[k],
                        PROBES[p].name, rc, CATERVA_ERR_INVALID_STORAGE, same ? "unchanged" : "CHANGED",
                        reads ? "reads as before" : "CHANGED");
                failed = 1;
            }
            CHECK_OK(caterva_free(r.ctx, &r.ro));
            if (!same) {
                /* Start the next probes from the pack again. */
                free(before);
                if (make_pack(r.ctx, path, offsets, v) != 0) return 1;
                before = slurp(path, &len0);
                CHECK(before != NULL);
            }
        }
    }
    free(before);
    CHECK_OK(caterva_free(r.ctx, &r.other));
    CHECK(remove(path) == 0);
    CHECK_OK(caterva_ctx_free(&r.ctx));
    return failed;
}

/* Zeros as a vlmetalayer value, in every storage: the array reopens (from its
 * file, from a saved copy, from its serialised frame) with the value intact. */
static int test_vlmeta_of_zeros(const test_case_t *tc) {
    caterva_ctx_t *ctx;
    char path[256];
    caterva_params_t params;
    caterva_storage_t storage;
    CHECK_OK(h_setup(tc, "ro_zeros", &ctx, path, &params, &storage));
    caterva_array_t *a;
    CHECK_OK(caterva_zeros(ctx, &params, &storage, &a));
    uint8_t zeros[40] = {0}, odd[33] = {0};
    caterva_metalayer_t m = {.name = "z", .sdata = zeros, .size = 40};
    CHECK_OK(caterva_vlmeta_add(ctx, a, &m));
    caterva_metalayer_t m2 = {.name = "odd", .sdata = odd, .size = 33};
    CHECK_OK(caterva_vlmeta_add(ctx, a, &m2));
    uint8_t *frame;
    int64_t flen;
    bool needs_free;
    CHECK_OK(caterva_to_cframe(ctx, a, &frame, &flen, &needs_free));
    caterva_array_t *b;
    CHECK_OK(caterva_from_cframe(ctx, frame, flen, true, &b));
    if (needs_free) free(frame);
    caterva_metalayer_t got;
    CHECK_OK(caterva_vlmeta_get(ctx, b, "odd", &got));
    CHECK(got.size == 33 && memcmp(got.sdata, odd, 33) == 0);
    free(got.sdata);
    free(got.name);
    CHECK_OK(caterva_free(ctx, &b));
    if (storage.urlpath != NULL) {
        CHECK_OK(caterva_free(ctx, &a));
        CHECK_OK(caterva_open(ctx, path, &a));
        CHECK_OK(caterva_vlmeta_get(ctx, a, "z", &got));
        CHECK(got.size == 40 && memcmp(got.sdata, zeros, 40) == 0);
        free(got.sdata);
        free(got.name);
        char copy[300];
        snprintf(copy, sizeof(copy), "%s.copy", path);
        caterva_remove(ctx, copy);
        CHECK_OK(caterva_save(ctx, a, copy));
        CHECK_OK(caterva_free(ctx, &a));
        CHECK_OK(caterva_open(ctx, copy, &a));
        CHECK_OK(caterva_remove(ctx, copy));
        CHECK_OK(caterva_remove(ctx, path));
    }
    CHECK_OK(caterva_free(ctx, &a));
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* A default context in *ctx and a new 10x8 array of zeros at path (a frame
 * file named name), open in *a. */
static int small_array(caterva_ctx_t **ctx, char *path, const char *name, caterva_array_t **a) {
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    CHECK_OK(caterva_ctx_new(&cfg, ctx));
    caterva_params_t params;
    caterva_storage_t storage;
    snprintf(path, 256, "%s", name);
    h_small_params(&params, &storage, path, true);
    caterva_remove(*ctx, path);
    CHECK_OK(caterva_zeros(*ctx, &params, &storage, a));
    return 0;
}

static int test_metadata_too_large_to_reopen(const test_case_t *tc) {
    (void)tc;
    caterva_ctx_t *ctx;
    caterva_array_t *a;
    char path[256];
    if (small_array(&ctx, path, "ctest_ro_big.b2frame", &a) != 0) return 1;
    int32_t size = 17 << 20;
    uint8_t *zeros = calloc((size_t)size, 1);
    CHECK(zeros != NULL);
    caterva_metalayer_t m = {.name = "huge", .sdata = zeros, .size = size};
    CHECK_RC(caterva_vlmeta_add(ctx, a, &m), CATERVA_ERR_INVALID_ARGUMENT);
    free(zeros);
    CHECK(strstr(caterva_last_error(), "huge") != NULL);
    CHECK_OK(caterva_free(ctx, &a));
    CHECK_OK(caterva_open(ctx, path, &a));
    bool exists = true;
    CHECK_OK(caterva_vlmeta_exists(ctx, a, "huge", &exists));
    CHECK(!exists);
    CHECK_OK(caterva_free(ctx, &a));
    CHECK_OK(caterva_remove(ctx, path));
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

static int test_symlink_at_the_lock(const test_case_t *tc) {
    (void)tc;
    caterva_ctx_t *ctx;
    caterva_array_t *a;
    char path[256];
    if (small_array(&ctx, path, "ctest_ro_lock.b2frame", &a) != 0) return 1;
    CHECK_OK(caterva_free(ctx, &a));
    remove("ctest_ro_lock.b2frame.caterva-lock");
    remove("ctest_ro_lock_target");
    CHECK(symlink("ctest_ro_lock_target", "ctest_ro_lock.b2frame.caterva-lock") == 0);
    a = NULL;
    CHECK_RC(caterva_open(ctx, path, &a), CATERVA_ERR_INVALID_STORAGE);
    CHECK(a == NULL);
    CHECK(strstr(caterva_last_error(), "not a caterva lock file") != NULL);
    struct stat st;
    CHECK(lstat("ctest_ro_lock_target", &st) != 0); /* the dangling link's target was not created */
    CHECK(lstat("ctest_ro_lock.b2frame.caterva-lock", &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(remove("ctest_ro_lock.b2frame.caterva-lock") == 0);
    CHECK_OK(caterva_open(ctx, path, &a));
    CHECK_OK(caterva_free(ctx, &a));
    CHECK_OK(caterva_remove(ctx, path));
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

static int write_file(const char *path, const char *text) {
    FILE *fp = fopen(path, "wb");
    if (fp == NULL) return 1;
    size_t n = strlen(text);
    int bad = fwrite(text, 1, n, fp) != n;
    return fclose(fp) != 0 || bad;
}

static int file_is(const char *path, const char *text) {
    long len;
    unsigned char *got = slurp(path, &len);
    int same = got != NULL && len == (long)strlen(text) && memcmp(got, text, (size_t)len) == 0;
    free(got);
    return same;
}

/* A user's files with the names caterva uses beside an array: neither
 * trusted (the array opens and reads) nor deleted. */
static int test_foreign_sidecars(const test_case_t *tc) {
    (void)tc;
    caterva_ctx_t *ctx;
    caterva_array_t *a;
    char path[256];
    if (small_array(&ctx, path, "ctest_ro_side.b2frame", &a) != 0) return 1;
    CHECK_OK(caterva_free(ctx, &a));
    const char *names[] = {"ctest_ro_side.b2frame.caterva-journal", "ctest_ro_side.b2frame.caterva-journal-tmp",
                           "ctest_ro_side.b2frame.caterva-old", "ctest_ro_side.b2frame.caterva-tmp-12-3"};
    for (int i = 0; i < 4; i++) CHECK(write_file(names[i], "a user's notes\n") == 0);
    CHECK(write_file("ctest_ro_side.b2frame.caterva-saving", "") == 0);
    CHECK_OK(caterva_open(ctx, path, &a));
    int32_t items[80];
    CHECK_OK(caterva_to_buffer(ctx, a, items, sizeof(items)));
    CHECK(items[0] == 0 && items[79] == 0);
    /* A write needs the journal's name: it says what is in the way. */
    int64_t start[2] = {0, 0}, stop[2] = {1, 1}, shape[2] = {1, 1};
    int32_t one = 1;
    CHECK_RC(caterva_set_slice_buffer(ctx, &one, shape, 4, start, stop, a), CATERVA_ERR_INVALID_STORAGE);
    CHECK(strstr(caterva_last_error(), "in the way") != NULL);
    CHECK_OK(caterva_free(ctx, &a));
    for (int i = 0; i < 4; i++) {
        CHECK(file_is(names[i], "a user's notes\n"));
        CHECK(remove(names[i]) == 0);
    }
    remove("ctest_ro_side.b2frame.caterva-saving");
    CHECK_OK(caterva_open(ctx, path, &a));
    CHECK_OK(caterva_set_slice_buffer(ctx, &one, shape, 4, start, stop, a));
    CHECK_OK(caterva_free(ctx, &a));
    CHECK_OK(caterva_remove(ctx, path));
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

static int test_unregistered_ids(const test_case_t *tc) {
    (void)tc;
    caterva_ctx_t *ctx = NULL;
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    cfg.compcodec = 99;
    CHECK_RC(caterva_ctx_new(&cfg, &ctx), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(ctx == NULL);
    cfg.compcodec = 32; /* the first plugin id: nothing is registered under it here */
    CHECK_RC(caterva_ctx_new(&cfg, &ctx), CATERVA_ERR_INVALID_ARGUMENT);
    cfg = (caterva_config_t)CATERVA_CONFIG_DEFAULTS;
    cfg.filters[4] = 99;
    CHECK_RC(caterva_ctx_new(&cfg, &ctx), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(ctx == NULL);
    cfg.filters[4] = BLOSC_BITSHUFFLE;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

static int test_dict_needs_zstd(const test_case_t *tc) {
    (void)tc;
    caterva_ctx_t *ctx = NULL;
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    cfg.usedict = 1;
    cfg.compcodec = BLOSC_LZ4;
    CHECK_RC(caterva_ctx_new(&cfg, &ctx), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(ctx == NULL);
    CHECK(strstr(caterva_last_error(), "use_dict with codec lz4") != NULL);
    CHECK(strstr(caterva_last_error(), "ZSTD only") != NULL);
    cfg.compcodec = BLOSC_ZSTD;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

void suite_readonly(void) {
    RUN_CASE(test_every_change_refused);
    RUN_ALL_CASES(test_vlmeta_of_zeros);
    RUN_CASE(test_metadata_too_large_to_reopen);
    RUN_CASE(test_symlink_at_the_lock);
    RUN_CASE(test_foreign_sidecars);
    RUN_CASE(test_unregistered_ids);
    RUN_CASE(test_dict_needs_zstd);
}
