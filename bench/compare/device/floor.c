/* The codec floor: compress then decompress 64 MiB of the climate field in
 * 6.2 MB chunks (blocks of 64.8 KB, the benchmark's), LZ4 5 + shuffle and
 * ZSTD 5 + shuffle, one thread, with whichever libblosc2 this is linked to.
 * Usage: floor DATA.bin. Prints one JSON line per codec. */
#define _POSIX_C_SOURCE 200809L
#include <blosc2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
int main(int argc, char **argv) {
    const size_t chunk = 24 * 180 * 360 * 4, n = 10;
    uint8_t *src = malloc(chunk * n), *dst = malloc(chunk * n + BLOSC2_MAX_OVERHEAD * n), *out = malloc(chunk);
    FILE *f = fopen(argv[1], "rb");
    if (!f || fread(src, 1, chunk * n, f) != chunk * n) return 1;
    fclose(f);
    blosc2_init();
    int codecs[2] = {BLOSC_LZ4, BLOSC_ZSTD};
    for (int c = 0; c < 2; c++) {
        blosc2_cparams cp = BLOSC2_CPARAMS_DEFAULTS;
        cp.compcode = codecs[c]; cp.clevel = 5; cp.typesize = 4; cp.nthreads = 1; cp.blocksize = 4 * 45 * 90 * 4;
        cp.splitmode = BLOSC_AUTO_SPLIT;
        blosc2_context *cc = blosc2_create_cctx(cp);
        blosc2_dparams dp = BLOSC2_DPARAMS_DEFAULTS; dp.nthreads = 1;
        blosc2_context *dc = blosc2_create_dctx(dp);
        size_t at[11] = {0};
        double t0 = now();
        for (size_t i = 0; i < n; i++) {
            int k = blosc2_compress_ctx(cc, src + i * chunk, (int32_t)chunk, dst + at[i], (int32_t)(chunk + BLOSC2_MAX_OVERHEAD));
            if (k <= 0) return 2;
            at[i + 1] = at[i] + (size_t)k;
        }
        double tc = now() - t0, best = 1e9;
        for (int rep = 0; rep < 5; rep++) {
            t0 = now();
            for (size_t i = 0; i < n; i++)
                if (blosc2_decompress_ctx(dc, dst + at[i], (int32_t)(at[i + 1] - at[i]), out, (int32_t)chunk) != (int)chunk) return 3;
            double t = now() - t0;
            if (t < best) best = t;
        }
        printf("{\"floor\": \"%s\", \"version\": \"%s\", \"compress_ms\": %.2f, \"decompress_ms\": %.2f, \"mb\": %.1f}\n",
               codecs[c] == BLOSC_LZ4 ? "lz4" : "zstd", BLOSC2_VERSION_STRING, tc, best, chunk * n / 1e6);
        blosc2_free_ctx(cc); blosc2_free_ctx(dc);
    }
    return 0;
}
