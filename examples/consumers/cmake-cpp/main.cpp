// Downstream C++ consumer (CMake, find_package(Caterva)): caterva.h used from
// C++ directly. Builds a 3-D array of doubles, reads an orthogonal selection,
// round-trips it through a serialised frame and checks every item. Exits
// non-zero on any failure.
#include <caterva.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

void check(bool ok, const char *what, int line) {
    if (!ok) {
        std::fprintf(stderr, "main.cpp:%d: check failed: %s\n", line, what);
        std::exit(1);
    }
}
#define CHECK(cond) check((cond), #cond, __LINE__)

constexpr int64_t N0 = 12, N1 = 30, N2 = 17;

double value(int64_t i, int64_t j, int64_t k) { return static_cast<double>(i * 10000 + j * 100 + k) / 8.0; }

}  // namespace

int main() {
    caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
    cfg.nthreads = 2;
    caterva_ctx_t *ctx = nullptr;
    CHECK(caterva_ctx_new(&cfg, &ctx) == CATERVA_SUCCEED);

    std::vector<double> data(N0 * N1 * N2);
    for (int64_t i = 0; i < N0; i++)
        for (int64_t j = 0; j < N1; j++)
            for (int64_t k = 0; k < N2; k++) data[(i * N1 + j) * N2 + k] = value(i, j, k);

    caterva_params_t params{};
    params.itemsize = sizeof(double);
    params.ndim = 3;
    params.shape[0] = N0;
    params.shape[1] = N1;
    params.shape[2] = N2;
    caterva_storage_t storage{};
    const int32_t chunks[3] = {5, 10, 17}, blocks[3] = {5, 4, 6};
    for (int d = 0; d < 3; d++) {
        storage.chunkshape[d] = chunks[d];
        storage.blockshape[d] = blocks[d];
    }
    caterva_array_t *arr = nullptr;
    CHECK(caterva_from_buffer(ctx, data.data(), static_cast<int64_t>(data.size() * sizeof(double)), &params,
                              &storage, &arr) == CATERVA_SUCCEED);

    // Unsorted indices with a repeat, on every axis.
    std::vector<int64_t> s0 = {11, 0, 4}, s1 = {29, 3, 3, 15}, s2 = {16, 1};
    int64_t *selection[3] = {s0.data(), s1.data(), s2.data()};
    int64_t selshape[3] = {3, 4, 2};
    std::vector<double> picked(3 * 4 * 2);
    CHECK(caterva_get_orthogonal_selection(ctx, arr, selection, selshape, picked.data(), selshape,
                                           static_cast<int64_t>(picked.size() * sizeof(double))) == CATERVA_SUCCEED);
    for (size_t a = 0; a < s0.size(); a++)
        for (size_t b = 0; b < s1.size(); b++)
            for (size_t c = 0; c < s2.size(); c++)
                CHECK(picked[(a * s1.size() + b) * s2.size() + c] == value(s0[a], s1[b], s2[c]));

    // Serialise to a contiguous frame and back: the same items.
    uint8_t *cframe = nullptr;
    int64_t cframe_len = 0;
    bool needs_free = false;
    CHECK(caterva_to_cframe(ctx, arr, &cframe, &cframe_len, &needs_free) == CATERVA_SUCCEED);
    caterva_array_t *back = nullptr;
    CHECK(caterva_from_cframe(ctx, cframe, cframe_len, true, &back) == CATERVA_SUCCEED);
    if (needs_free) std::free(cframe);
    CHECK(back->ndim == 3 && back->shape[0] == N0 && back->shape[1] == N1 && back->shape[2] == N2);
    std::vector<double> all(data.size());
    CHECK(caterva_to_buffer(ctx, back, all.data(), static_cast<int64_t>(all.size() * sizeof(double))) ==
          CATERVA_SUCCEED);
    CHECK(all == data);

    CHECK(caterva_free(ctx, &back) == CATERVA_SUCCEED);
    CHECK(caterva_free(ctx, &arr) == CATERVA_SUCCEED);
    CHECK(caterva_ctx_free(&ctx) == CATERVA_SUCCEED);
    std::printf("consumer (CMake, C++): ok, %lld-byte frame\n", static_cast<long long>(cframe_len));
    return 0;
}
