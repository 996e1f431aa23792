/* Paths: calls that take a path never lose what is there unless it is an
 * array they may replace.
 *
 * - caterva_copy, caterva_get_slice and caterva_save to the source's own
 *   file, however it is spelt ("./src", a symbolic link, a hard link), or
 *   to a path inside the source's directory, are refused (save may succeed
 *   without changing anything): the source keeps its data.
 * - Creating, saving or copying over something that is not an array (a text
 *   file, a directory of other files with a stray "chunks.b2frame", an index
 *   that is not a Blosc2 frame) gives CATERVA_ERR_INVALID_STORAGE and leaves
 *   it as it was.
 * - caterva_remove removes arrays only: anything else is refused with
 *   CATERVA_ERR_INVALID_STORAGE and left as it was; a missing path is fine.
 * - Creating an array over an existing one is atomic: a process killed in
 *   the middle leaves the old array or the complete new one, never a
 *   partial one (it is written beside the path and renamed into place). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define SRC_FILE "ctest_paths_src.b2frame"
#define SRC_DIR "ctest_paths_src.b2nd"
#define LINK "ctest_paths_link"
#define HARDLINK "ctest_paths_hardlink.b2frame"
#define NOTES "ctest_paths_notes.txt"
#define PHOTOS "ctest_paths_photos"
#define FAKE "ctest_paths_fake.b2nd"
#define KILLED_FILE "ctest_paths_killed.b2frame"
#define KILLED_DIR "ctest_paths_killed.b2nd"

static const char NOTES_TEXT[] = "shopping: milk, bread\nremember the meeting\n";

static int sentinel_object;
#define SENTINEL ((caterva_array_t *)&sentinel_object)

/* Write `text` to `path` (replacing it). */
static int put_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    CHECK(fwrite(text, 1, strlen(text), f) == strlen(text));
    CHECK(fclose(f) == 0);
    return 0;
}

/* Whether `path` holds exactly `text`. */
static bool has_text(const char *path, const char *text) {
    char buf[256] = {0};
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return false;
    }
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    return n == strlen(text) && memcmp(buf, text, n) == 0;
}

/* Remove a file or symbolic link if it is there. */
static void drop(const char *path) {
    (void)unlink(path);
}

/* The 10x8 array of 4-byte items h_fill_buffer describes, at `path`. */
static int make_array(caterva_ctx_t *ctx, const char *path, bool contiguous, const uint8_t *data,
                      caterva_array_t **out) {
    caterva_params_t params;
    caterva_storage_t storage;
    char url[128];
    snprintf(url, sizeof(url), "%s", path != NULL ? path : "");
    h_small_params(&params, &storage, path != NULL ? url : NULL, contiguous);
    CHECK_OK(caterva_from_buffer(ctx, (void *)data, 320, &params, &storage, out));
    return 0;
}

/* `arr` and a fresh handle on `path` both hold `data`. */
static int holds(caterva_ctx_t *ctx, caterva_array_t *arr, const char *path, const uint8_t *data) {
    uint8_t out[320];
    memset(out, 0, sizeof(out));
    CHECK_OK(caterva_to_buffer(ctx, arr, out, (int64_t)sizeof(out)));
    CHECK(memcmp(out, data, sizeof(out)) == 0);
    caterva_array_t *again = NULL;
    CHECK_OK(caterva_open(ctx, path, &again));
    memset(out, 0, sizeof(out));
    CHECK_OK(caterva_to_buffer(ctx, again, out, (int64_t)sizeof(out)));
    CHECK(memcmp(out, data, sizeof(out)) == 0);
    CHECK_OK(caterva_free(ctx, &again));
    return 0;
}

/* caterva_copy and caterva_get_slice of `arr` to `target` (as a frame of
 * kind `contiguous`) are refused and write no output. */
static int refuses_derive(caterva_ctx_t *ctx, caterva_array_t *arr, const char *target, bool contiguous) {
    caterva_params_t params;
    caterva_storage_t storage;
    char url[128];
    snprintf(url, sizeof(url), "%s", target);
    h_small_params(&params, &storage, url, contiguous);
    caterva_array_t *out = SENTINEL;
    int rc = caterva_copy(ctx, arr, &storage, &out);
    if (rc != CATERVA_ERR_INVALID_STORAGE || out != SENTINEL) {
        fprintf(stderr, "    caterva_copy to '%s' returned %d\n", target, rc);
        if (rc == CATERVA_SUCCEED) {
            caterva_free(ctx, &out);
        }
        return 1;
    }
    int64_t start[2] = {1, 1}, stop[2] = {7, 6};
    rc = caterva_get_slice(ctx, arr, start, stop, &storage, &out);
    if (rc != CATERVA_ERR_INVALID_STORAGE || out != SENTINEL) {
        fprintf(stderr, "    caterva_get_slice to '%s' returned %d\n", target, rc);
        if (rc == CATERVA_SUCCEED) {
            caterva_free(ctx, &out);
        }
        return 1;
    }
    return 0;
}

/* Finding 1: the source's own file, spelt another way, is the source. */
static int test_copy_onto_source(const test_case_t *tc) {
    (void)tc;
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    uint8_t data[320];
    h_fill_buffer(data, 80, 4);
    for (int contiguous = 1; contiguous >= 0; contiguous--) {
        const char *src = contiguous ? SRC_FILE : SRC_DIR;
        char own[64], dotted[96], inside[96];
        snprintf(own, sizeof(own), "%s", src);
        snprintf(dotted, sizeof(dotted), "./%s", src);
        snprintf(inside, sizeof(inside), "%s/inner.b2frame", src);
        drop(LINK);
        drop(HARDLINK);
        CHECK_OK(caterva_remove(ctx, own));
        caterva_array_t *arr = NULL;
        if (make_array(ctx, src, contiguous, data, &arr)) {
            return 1;
        }
        CHECK(symlink(src, LINK) == 0);
        const char *targets[4] = {dotted, LINK, contiguous ? HARDLINK : inside, own};
        if (contiguous) {
            CHECK(link(src, HARDLINK) == 0);
        }
        for (int t = 0; t < 4; t++) {
            /* Either kind of frame: neither may replace the source. */
            for (int kind = 0; kind < 2; kind++) {
                if (refuses_derive(ctx, arr, targets[t], kind) || holds(ctx, arr, src, data)) {
                    fprintf(stderr, "    (source '%s', target '%s', contiguous %d)\n", src, targets[t], kind);
                    return 1;
                }
            }
        }
        /* Saving onto itself, spelt any way: either outcome, but no loss. */
        for (int t = 0; t < 2; t++) {
            char target[96];
            snprintf(target, sizeof(target), "%s", targets[t]);
            int rc = caterva_save(ctx, arr, target);
            (void)rc;
            if (holds(ctx, arr, src, data)) {
                fprintf(stderr, "    (saving '%s' to '%s')\n", src, target);
                return 1;
            }
        }
        /* A save into the source's own directory is refused. */
        if (!contiguous) {
            CHECK_RC(caterva_save(ctx, arr, inside), CATERVA_ERR_INVALID_STORAGE);
            CHECK(!h_exists(inside));
            if (holds(ctx, arr, src, data)) {
                return 1;
            }
        }
        CHECK_OK(caterva_free(ctx, &arr));
        drop(LINK);
        drop(HARDLINK);
        CHECK_OK(caterva_remove(ctx, own));
        CHECK(!h_exists(src));
    }
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* A directory holding `names` (each file holding its own name), or a
 * frame file where the name ends in ".b2frame" and `frame` is set. */
static int make_dir(caterva_ctx_t *ctx, const char *dir, const char **names, int n, bool frame) {
    mkdir(dir, 0755);
    for (int i = 0; i < n; i++) {
        char p[128];
        snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
        size_t len = strlen(names[i]);
        if (frame && len > 8 && strcmp(names[i] + len - 8, ".b2frame") == 0) {
            caterva_params_t params;
            caterva_storage_t storage;
            h_small_params(&params, &storage, p, true);
            caterva_array_t *a = NULL;
            CHECK_OK(caterva_zeros(ctx, &params, &storage, &a));
            CHECK_OK(caterva_free(ctx, &a));
        } else if (put_file(p, names[i])) {
            return 1;
        }
    }
    return 0;
}

/* The directory still holds `names`; with `text`, the ones that are not frames hold their names. */
static int dir_intact(const char *dir, const char **names, int n, bool frame) {
    for (int i = 0; i < n; i++) {
        char p[128];
        snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
        size_t len = strlen(names[i]);
        bool is_frame = frame && len > 8 && strcmp(names[i] + len - 8, ".b2frame") == 0;
        if (!(is_frame ? h_exists(p) : has_text(p, names[i]))) {
            fprintf(stderr, "    '%s' is gone or changed\n", p);
            return 1;
        }
    }
    return 0;
}

static void remove_dir(const char *dir, const char **names, int n) {
    for (int i = 0; i < n; i++) {
        char p[128];
        snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
        drop(p);
    }
    (void)rmdir(dir);
}

static const char *PHOTO_NAMES[] = {"holiday.jpg", "chunks.b2frame", "00000000.chunk"};
static const char *FAKE_NAMES[] = {"chunks.b2frame", "00000000.chunk", "00000001.chunk"};

/* Every way of writing an array at `path` (a frame of kind `contiguous`)
 * is refused with CATERVA_ERR_INVALID_STORAGE. */
static int refuses_all(caterva_ctx_t *ctx, caterva_array_t *src, const char *path, bool contiguous) {
    caterva_params_t params;
    caterva_storage_t storage;
    char url[128];
    snprintf(url, sizeof(url), "%s", path);
    h_small_params(&params, &storage, url, contiguous);
    caterva_array_t *out = SENTINEL;
    uint8_t data[320] = {0};
    uint8_t one[4] = {1, 0, 0, 0};
    CHECK_RC(caterva_zeros(ctx, &params, &storage, &out), CATERVA_ERR_INVALID_STORAGE);
    CHECK_RC(caterva_uninit(ctx, &params, &storage, &out), CATERVA_ERR_INVALID_STORAGE);
    CHECK_RC(caterva_full(ctx, &params, &storage, one, &out), CATERVA_ERR_INVALID_STORAGE);
    CHECK_RC(caterva_from_buffer(ctx, data, 320, &params, &storage, &out), CATERVA_ERR_INVALID_STORAGE);
    CHECK_RC(caterva_copy(ctx, src, &storage, &out), CATERVA_ERR_INVALID_STORAGE);
    int64_t start[2] = {0, 0}, stop[2] = {5, 5};
    CHECK_RC(caterva_get_slice(ctx, src, start, stop, &storage, &out), CATERVA_ERR_INVALID_STORAGE);
    CHECK(out == SENTINEL);
    return 0;
}

/* Finding 2: only a Blosc2 frame file, or a directory holding a frame index
 * and chunk files only, is an array that a new one may replace. */
static int test_not_an_array_is_kept(const test_case_t *tc) {
    (void)tc;
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    uint8_t data[320];
    h_fill_buffer(data, 80, 4);
    caterva_array_t *src = NULL;
    if (make_array(ctx, NULL, true, data, &src)) {
        return 1;
    }
    caterva_array_t *sparse_src = NULL;
    {
        caterva_params_t params;
        caterva_storage_t storage;
        h_small_params(&params, &storage, NULL, false);
        CHECK_OK(caterva_from_buffer(ctx, data, 320, &params, &storage, &sparse_src));
    }
    if (put_file(NOTES, NOTES_TEXT) || make_dir(ctx, PHOTOS, PHOTO_NAMES, 3, true) ||
        make_dir(ctx, FAKE, FAKE_NAMES, 3, false)) {
        return 1;
    }
    /* A text file where a frame file goes. */
    if (refuses_all(ctx, src, NOTES, true)) {
        fprintf(stderr, "    (over %s)\n", NOTES);
        return 1;
    }
    CHECK_RC(caterva_save(ctx, src, NOTES), CATERVA_ERR_INVALID_STORAGE);
    CHECK(has_text(NOTES, NOTES_TEXT));
    /* Directories of other things where a sparse frame goes. */
    const char *dirs[2] = {PHOTOS, FAKE};
    const char **names[2] = {PHOTO_NAMES, FAKE_NAMES};
    for (int d = 0; d < 2; d++) {
        char dir[64];
        snprintf(dir, sizeof(dir), "%s", dirs[d]);
        if (refuses_all(ctx, src, dir, false)) {
            fprintf(stderr, "    (over %s)\n", dir);
            return 1;
        }
        CHECK_RC(caterva_save(ctx, sparse_src, dir), CATERVA_ERR_INVALID_STORAGE);
        if (dir_intact(dir, names[d], 3, d == 0)) {
            return 1;
        }
    }
    CHECK_OK(caterva_free(ctx, &src));
    CHECK_OK(caterva_free(ctx, &sparse_src));
    drop(NOTES);
    remove_dir(PHOTOS, PHOTO_NAMES, 3);
    remove_dir(FAKE, FAKE_NAMES, 3);
    CHECK(!h_exists(NOTES) && !h_exists(PHOTOS) && !h_exists(FAKE));
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* Finding 3: caterva_remove removes arrays, and nothing else. */
static int test_remove_only_arrays(const test_case_t *tc) {
    (void)tc;
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    if (put_file(NOTES, NOTES_TEXT) || make_dir(ctx, PHOTOS, PHOTO_NAMES, 3, true) ||
        make_dir(ctx, FAKE, FAKE_NAMES, 3, false)) {
        return 1;
    }
    char notes[] = NOTES, photos[] = PHOTOS, fake[] = FAKE, empty_dir[] = "ctest_paths_empty.b2nd";
    char missing[] = "ctest_paths_missing.b2frame", link_path[] = LINK;
    CHECK_RC(caterva_remove(ctx, notes), CATERVA_ERR_INVALID_STORAGE);
    CHECK(has_text(NOTES, NOTES_TEXT));
    CHECK_RC(caterva_remove(ctx, photos), CATERVA_ERR_INVALID_STORAGE);
    CHECK_RC(caterva_remove(ctx, fake), CATERVA_ERR_INVALID_STORAGE);
    if (dir_intact(PHOTOS, PHOTO_NAMES, 3, true) || dir_intact(FAKE, FAKE_NAMES, 3, false)) {
        return 1;
    }
    (void)rmdir(empty_dir);
    CHECK(mkdir(empty_dir, 0755) == 0);
    CHECK_RC(caterva_remove(ctx, empty_dir), CATERVA_ERR_INVALID_STORAGE);
    CHECK(h_is_dir(empty_dir));
    CHECK(rmdir(empty_dir) == 0);
    /* A missing path is not an error. */
    CHECK_OK(caterva_remove(ctx, missing));
    /* Arrays go, with what their journal left. */
    uint8_t data[320];
    h_fill_buffer(data, 80, 4);
    for (int contiguous = 0; contiguous < 2; contiguous++) {
        char src[64];
        snprintf(src, sizeof(src), "%s", contiguous ? SRC_FILE : SRC_DIR);
        caterva_array_t *arr = NULL;
        if (make_array(ctx, src, contiguous, data, &arr)) {
            return 1;
        }
        CHECK_OK(caterva_free(ctx, &arr));
        /* A symbolic link to an array is not an array: refused, both kept. */
        drop(LINK);
        CHECK(symlink(src, LINK) == 0);
        CHECK_RC(caterva_remove(ctx, link_path), CATERVA_ERR_INVALID_STORAGE);
        CHECK(h_exists(src));
        drop(LINK);
        CHECK_OK(caterva_remove(ctx, src));
        CHECK(!h_exists(src));
    }
    /* The array inside the photo directory is an array. */
    char inner[96];
    snprintf(inner, sizeof(inner), "%s/chunks.b2frame", PHOTOS);
    CHECK_OK(caterva_remove(ctx, inner));
    CHECK(!h_exists(inner));
    drop(NOTES);
    remove_dir(PHOTOS, PHOTO_NAMES, 3);
    remove_dir(FAKE, FAKE_NAMES, 3);
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

/* The big array of the killed-create test: value i * mul + add at item i. */
#define KILL_ROWS 240
#define KILL_COLS 300
static int create_big(caterva_ctx_t *ctx, const char *path, bool contiguous, uint32_t mul, uint32_t add,
                      uint32_t *buf) {
    for (int64_t i = 0; i < KILL_ROWS * KILL_COLS; i++) {
        buf[i] = (uint32_t)i * mul + add;
    }
    caterva_params_t params;
    caterva_storage_t storage;
    char url[128];
    snprintf(url, sizeof(url), "%s", path);
    h_small_params(&params, &storage, url, contiguous);
    params.shape[0] = KILL_ROWS;
    params.shape[1] = KILL_COLS;
    storage.chunkshape[0] = 16;
    storage.chunkshape[1] = 20;
    storage.blockshape[0] = 8;
    storage.blockshape[1] = 10;
    caterva_array_t *a = NULL;
    int rc = caterva_from_buffer(ctx, buf, (int64_t)KILL_ROWS * KILL_COLS * 4, &params, &storage, &a);
    if (rc == CATERVA_SUCCEED) {
        caterva_free(ctx, &a);
    }
    return rc;
}

/* Which of the two arrays (1: mul 1, 2: mul 3) `path` holds, or 0. */
static int which_big(caterva_ctx_t *ctx, char *path, uint32_t *buf) {
    caterva_array_t *a = NULL;
    int rc = caterva_open(ctx, path, &a);
    if (rc != CATERVA_SUCCEED) {
        fprintf(stderr, "    '%s' does not open (%d)\n", path, rc);
        return 0;
    }
    bool shaped = a->ndim == 2 && a->shape[0] == KILL_ROWS && a->shape[1] == KILL_COLS;
    rc = shaped ? caterva_to_buffer(ctx, a, buf, (int64_t)KILL_ROWS * KILL_COLS * 4) : -1;
    caterva_free(ctx, &a);
    if (rc != CATERVA_SUCCEED) {
        fprintf(stderr, "    '%s' cannot be read whole (%d)\n", path, rc);
        return 0;
    }
    for (int which = 1; which <= 2; which++) {
        uint32_t mul = which == 1 ? 1 : 3;
        int64_t i = 0;
        while (i < KILL_ROWS * KILL_COLS && buf[i] == (uint32_t)i * mul + (uint32_t)which) {
            i++;
        }
        if (i == KILL_ROWS * KILL_COLS) {
            return which;
        }
    }
    fprintf(stderr, "    '%s' holds a mix\n", path);
    return 0;
}

/* A child that keeps re-creating the array at a path is killed at random
 * moments: the path always holds one whole array. */
static int test_killed_create_keeps_old(const test_case_t *tc) {
    (void)tc;
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    cfg.nthreads = 2;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    uint32_t *buf = malloc((size_t)KILL_ROWS * KILL_COLS * 4);
    CHECK(buf != NULL);
    srand((unsigned)time(NULL));
    for (int contiguous = 1; contiguous >= 0; contiguous--) {
        char path[64];
        snprintf(path, sizeof(path), "%s", contiguous ? KILLED_FILE : KILLED_DIR);
        CHECK_OK(caterva_remove(ctx, path));
        CHECK_OK(create_big(ctx, path, contiguous, 1, 1, buf));
        int seen[3] = {0, 0, 0};
        for (int round = 0; round < 24; round++) {
            pid_t pid = fork();
            CHECK(pid >= 0);
            if (pid == 0) {
                for (uint32_t k = 0;; k++) {
                    create_big(ctx, path, contiguous, k % 2 ? 1 : 3, k % 2 ? 1 : 2, buf);
                }
            }
            struct timespec pause = {0, (long)(rand() % 300000) * 1000L};
            nanosleep(&pause, NULL);
            kill(pid, SIGKILL);
            int status = 0;
            CHECK(waitpid(pid, &status, 0) == pid);
            int which = which_big(ctx, path, buf);
            if (which == 0) {
                fprintf(stderr, "    after kill %d of the creating child (contiguous %d)\n", round, contiguous);
                free(buf);
                return 1;
            }
            seen[which]++;
        }
        printf("    killed creates (contiguous %d): old array %d, new %d\n", contiguous, seen[1], seen[2]);
        CHECK_OK(caterva_remove(ctx, path));
        CHECK(!h_exists(path));
    }
    free(buf);
    CHECK_OK(caterva_ctx_free(&ctx));
    return 0;
}

void suite_paths(void) {
    RUN_CASE(test_copy_onto_source);
    RUN_CASE(test_not_an_array_is_kept);
    RUN_CASE(test_remove_only_arrays);
    RUN_CASE(test_killed_create_keeps_old);
}
