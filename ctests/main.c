/* Runs every suite (or the one named, or all in parallel with -j N); the
 * last line is "N passed, N failed". */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define SUITES(X) X(abi) X(header) X(zeros) X(full) X(roundtrip) X(get_slice_buffer) X(set_slice_buffer) X(persistency) X(save) X(metalayers) X(serialize) X(cframe) X(bad_input) X(dtype) X(checksums) \
    X(resize) X(insert) X(delete) X(squeeze) X(get_slice) X(copy) X(orthogonal) X(reshape_mixed) X(reshape_bad_input) \
    X(hardening) X(threads) X(last_error) X(paths) X(fork) X(bounded) \
    X(extras) X(blz) X(partition) X(readonly) X(durability) X(reduce) X(stale)

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
#define DECLARE(name) void suite_##name(void);
SUITES(DECLARE)

typedef struct {
    const char *name;
    void (*run)(void);
} suite_t;
#define ENTRY(name) {#name, suite_##name},
static const suite_t suites[] = {SUITES(ENTRY)};
enum { NSUITES = sizeof(suites) / sizeof(suites[0]) };

/* Run one suite here; its line says how long it took (so that a slow one
 * shows in CI's log). */
static void run_suite(const suite_t *s) {
    int before = h_failed;
    double start = now_s();
    s->run();
    printf("suite %-16s %s (%.2f s)\n", s->name, h_failed == before ? "ok" : "FAILED", now_s() - start);
}

/* `ctests -j N`: every suite in a process of its own, N at once, each in a
 * directory of its own (suite-NAME/, where its files go; its output in
 * suite-NAME/out.log), their output printed in the suites' order. The
 * suites wait on fsync and on child processes as much as on the CPU. */
static int run_parallel(int jobs) {
    pid_t pids[NSUITES];
    int status[NSUITES];
    int started = 0, running = 0, finished = 0;
    char dir[64], path[96];
    while (finished < NSUITES) {
        while (running < jobs && started < NSUITES) {
            int i = started++;
            snprintf(dir, sizeof(dir), "suite-%s", suites[i].name);
            mkdir(dir, 0755);
            fflush(stdout);
            pid_t pid = fork();
            if (pid < 0) {
                perror("fork");
                return 1;
            }
            if (pid == 0) {
                if (chdir(dir) != 0 || freopen("out.log", "w", stdout) == NULL) {
                    exit(2);
                }
                setvbuf(stdout, NULL, _IOLBF, 0);
                dup2(fileno(stdout), 2);
                run_suite(&suites[i]);
                printf("%d passed, %d failed\n", h_passed, h_failed);
                fflush(stdout);
                /* exit, not _exit: LeakSanitizer checks at exit. */
                exit(h_failed == 0 ? 0 : 1);
            }
            pids[i] = pid;
            running++;
        }
        int st;
        pid_t done = wait(&st);
        if (done < 0) {
            perror("wait");
            return 1;
        }
        for (int i = 0; i < started; i++) {
            if (pids[i] == done) {
                status[i] = st;
                pids[i] = 0;
            }
        }
        running--;
        finished++;
    }
    int passed = 0, failed = 0;
    for (int i = 0; i < NSUITES; i++) {
        snprintf(path, sizeof(path), "suite-%s/out.log", suites[i].name);
        FILE *f = fopen(path, "r");
        char line[4096];
        int p = 0, q = 0, counted = 0;
        while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
            if (sscanf(line, "%d passed, %d failed", &p, &q) == 2) {
                counted = 1;
                continue;
            }
            fputs(line, stdout);
        }
        if (f != NULL) {
            fclose(f);
        }
        if (!counted || !WIFEXITED(status[i])) {
            /* A crash or an abort: the suite failed, whatever it printed. */
            printf("suite %-16s FAILED (%s %d)\n", suites[i].name, WIFSIGNALED(status[i]) ? "signal" : "exit",
                   WIFSIGNALED(status[i]) ? WTERMSIG(status[i]) : WEXITSTATUS(status[i]));
            q += 1;
        }
        passed += p;
        failed += q;
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    /* Line by line, so that the progress stays in order with stderr and
     * survives an abort (a sanitizer report). */
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 2 && strcmp(argv[1], "-j") == 0) {
        return run_parallel(atoi(argv[2]) > 0 ? atoi(argv[2]) : 1);
    }
    const char *only = argc > 1 ? argv[1] : NULL;
    for (int i = 0; i < NSUITES; i++) {
        if (only == NULL || strcmp(only, suites[i].name) == 0) {
            run_suite(&suites[i]);
        }
    }
    printf("%d passed, %d failed\n", h_passed, h_failed);
    return h_failed == 0 ? 0 : 1;
}
