/* Bounded resources on hostile frames: a small frame whose offsets index
 * claims 2^28 - 1 chunks (2 GiB of offsets), padded so that no compression
 * ratio gives it away, in one 512 MiB block or in 4 MiB blocks, is refused
 * by caterva_from_cframe (copied and in place) and caterva_open, in a child
 * whose address space is limited (RLIMIT_AS) to what it uses plus 256 MiB:
 * the checker used to decompress the whole claimed index (an abort, "memory
 * allocation failed", when the memory is not there).
 *
 * The limit is not set under AddressSanitizer or ThreadSanitizer (which
 * reserve terabytes of shadow memory); the calls must still be refused. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BOUNDED_NO_LIMIT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define BOUNDED_NO_LIMIT 1
#endif
#endif

#define FILE_PATH "ctest_bounded.b2frame"
#define CHILD_ALARM_S 60
/* What a child may add to its address space. */
#define BUDGET ((uint64_t)256 << 20)
/* The most chunks a frame indexes: 2^31 - 8 bytes of offsets. */
#define MAX_CHUNKS ((uint64_t)(INT32_MAX / 8))
/* The forged index's compressed size: enough that 2^31 bytes are not an
 * impossible ratio. */
#define PADDED 40000

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static uint64_t be64(const uint8_t *p) {
    return (uint64_t)be32(p) << 32 | be32(p + 4);
}

static void put_be64(uint8_t *p, uint64_t v) {
    for (int i = 7; i >= 0; i--) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
}

static void put_le32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
}

/* A copy of the contiguous frame f whose offsets index (between the data
 * and the trailer) is padded to PADDED bytes and made a compressed chunk of
 * MAX_CHUNKS offsets in blocks of `blocksize`, the header claiming as many
 * chunks. NULL if it cannot be made. */
static uint8_t *forge(const uint8_t *f, int64_t len, uint32_t blocksize, int64_t *forged_len) {
    uint64_t index_at = be32(f + 11) + be64(f + 39);
    uint64_t trailer_len = be32(f + len - 22);
    uint64_t trailer_at = (uint64_t)len - trailer_len;
    if (index_at >= trailer_at || trailer_at - index_at > PADDED) {
        return NULL;
    }
    uint64_t new_len = index_at + PADDED + trailer_len;
    uint8_t *g = calloc(new_len, 1);
    if (g == NULL) {
        return NULL;
    }
    memcpy(g, f, index_at);
    memcpy(g + index_at, f + index_at, trailer_at - index_at);
    memcpy(g + index_at + PADDED, f + trailer_at, trailer_len);
    uint8_t *ix = g + index_at;
    ix[2] &= (uint8_t)~BLOSC_MEMCPYED; /* not a plain copy */
    ix[3] = 8;                         /* 8-byte items */
    memset(ix + 16, 0, 6);             /* filters: shuffle only */
    ix[21] = BLOSC_SHUFFLE;
    ix[31] = 0; /* not special, no dictionary */
    put_le32(ix + 4, (uint32_t)(MAX_CHUNKS * 8));
    put_le32(ix + 8, blocksize);
    put_le32(ix + 12, PADDED);
    put_be64(g + 16, new_len);
    put_be64(g + 30, MAX_CHUNKS * be32(f + 58)); /* nbytes: MAX_CHUNKS chunks */
    *forged_len = (int64_t)new_len;
    return g;
}

/* Limit the address space to what this process uses plus BUDGET. */
static int limit_address_space(void) {
#if defined(__linux__) && !defined(BOUNDED_NO_LIMIT)
    FILE *statm = fopen("/proc/self/statm", "r");
    CHECK(statm != NULL);
    unsigned long pages = 0;
    int n = fscanf(statm, "%lu", &pages);
    fclose(statm);
    CHECK(n == 1);
    rlim_t limit = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + BUDGET;
    struct rlimit rl = {limit, limit};
    CHECK(setrlimit(RLIMIT_AS, &rl) == 0);
#endif
    return 0;
}

/* In the child: every way in refuses the forged frame. */
static int child_main(uint8_t *frame, int64_t len) {
    alarm(CHILD_ALARM_S);
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    CHECK(limit_address_space() == 0);
    caterva_array_t *arr = NULL;
    CHECK_RC(caterva_from_cframe(ctx, frame, len, true, &arr), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(arr == NULL);
    CHECK_RC(caterva_from_cframe(ctx, frame, len, false, &arr), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(arr == NULL);
    CHECK_RC(caterva_open(ctx, FILE_PATH, &arr), CATERVA_ERR_INVALID_ARGUMENT);
    CHECK(arr == NULL);
    return 0;
}

static int refused_in_bounds(uint32_t blocksize) {
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    caterva_ctx_t *ctx = NULL;
    CHECK_OK(caterva_ctx_new(&cfg, &ctx));
    caterva_array_t *arr = NULL;
    uint8_t *frame = NULL;
    int64_t len = 0;
    bool needs_free = false;
    if (h_small_frame(ctx, NULL, &arr, &frame, &len, &needs_free)) {
        return 1;
    }
    int64_t forged_len = 0;
    uint8_t *forged = forge(frame, len, blocksize, &forged_len);
    if (needs_free) {
        free(frame);
    }
    CHECK_OK(caterva_free(ctx, &arr));
    CHECK_OK(caterva_ctx_free(&ctx));
    CHECK(forged != NULL);
    FILE *fp = fopen(FILE_PATH, "wb");
    CHECK(fp != NULL);
    CHECK(fwrite(forged, 1, (size_t)forged_len, fp) == (size_t)forged_len);
    CHECK(fclose(fp) == 0);

    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        _exit(child_main(forged, forged_len));
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    free(forged);
    remove(FILE_PATH);
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "    blocks of %u bytes: child killed by signal %d (SIGABRT %d: an allocation failed; "
                        "SIGALRM %d: it hung)\n", blocksize, WTERMSIG(status), SIGABRT, SIGALRM);
        return 1;
    }
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return 0;
}

static int test_index_claims_2gib_in_one_block(const test_case_t *tc) {
    (void)tc;
    return refused_in_bounds(BLOSC2_MAXBLOCKSIZE);
}

static int test_index_claims_2gib_in_4mib_blocks(const test_case_t *tc) {
    (void)tc;
    return refused_in_bounds(4 << 20);
}

void suite_bounded(void) {
    RUN_CASE(test_index_claims_2gib_in_one_block);
    RUN_CASE(test_index_claims_2gib_in_4mib_blocks);
}
