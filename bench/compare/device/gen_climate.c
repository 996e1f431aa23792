/* A climate-like float32 field (time, lat, lon) for the device run: a
 * latitude/longitude base, a seasonal cycle, AR(1)-in-time noise smoothed
 * over 8x8 cells, rounded to 0.01. Usage: gen_climate T Y X out.bin */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
static uint64_t s = 0x9E3779B97F4A7C15ull;
static double uni(void) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return ((s >> 11) + 0.5) / 9007199254740992.0; }
static double gauss(void) { return sqrt(-2 * log(uni())) * cos(6.283185307179586 * uni()); }
int main(int argc, char **argv) {
    if (argc != 5) return 2;
    long T = atol(argv[1]), Y = atol(argv[2]), X = atol(argv[3]);
    FILE *f = fopen(argv[4], "wb");
    if (!f) return 1;
    float *noise = calloc((size_t)Y * X, 4), *w = malloc((size_t)Y * X * 4), *tmp = malloc((size_t)Y * X * 4), *out = malloc((size_t)Y * X * 4);
    for (long t = 0; t < T; t++) {
        for (long i = 0; i < Y * X; i++) w[i] = (float)gauss();
        for (long y = 0; y < Y; y++) { double acc = 0; for (long x = 0; x < X + 8; x++) { acc += w[y * X + x % X]; if (x >= 8) acc -= w[y * X + (x - 8) % X]; if (x >= 8) tmp[y * X + (x - 4) % X] = (float)(acc / 8); } }
        for (long x = 0; x < X; x++) { double acc = 0; for (long y = 0; y < Y; y++) { acc += tmp[y * X + x]; if (y >= 8) acc -= tmp[(y - 8) * X + x]; w[y * X + x] = (float)(acc / (y >= 8 ? 8 : y + 1)); } }
        for (long y = 0; y < Y; y++) {
            double lat = -90.0 + 180.0 * y / (Y - 1), sl = sin(lat * M_PI / 180);
            for (long x = 0; x < X; x++) {
                double lon = 360.0 * x / X;
                long i = y * X + x;
                noise[i] = (float)(0.8 * noise[i] + 0.6 * w[i]);
                double v = 288 - 30 * sl * sl + 3 * cos(3 * lon * M_PI / 180) * cos(lat * M_PI / 180) + 12 * sin(2 * M_PI * t / 24) * sl + noise[i];
                out[i] = (float)(round(v * 100) / 100);
            }
        }
        if (fwrite(out, 4, (size_t)Y * X, f) != (size_t)Y * X) return 1;
    }
    return fclose(f) != 0;
}
