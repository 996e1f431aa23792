// raii.cpp: the C example's work (create a file, reopen it, append, read a
// slice) through the RAII wrapper in caterva.hpp: no explicit free, and
// errors arrive as exceptions. Exits non-zero on any error or wrong item.
#include "caterva.hpp"

#include <cstdio>
#include <exception>

namespace {

constexpr int64_t COLS = 16;

double reading(int64_t row, int64_t col) { return static_cast<double>(row) + static_cast<double>(col) / 100.0; }

std::vector<double> make_rows(int64_t first, int64_t n) {
    std::vector<double> rows;
    for (int64_t r = first; r < first + n; r++)
        for (int64_t c = 0; c < COLS; c++) rows.push_back(reading(r, c));
    return rows;
}

// Reopen the file and check its shape, a slice and an error.
int check_file(const caterva::Context &ctx, const std::string &path) {
    caterva::Array arr = caterva::Array::open(ctx, path);
    const std::vector<int64_t> shape = arr.shape();
    if (shape != std::vector<int64_t>{75, COLS}) {
        std::fprintf(stderr, "shape %lld x %lld after the append\n", static_cast<long long>(shape[0]),
                     static_cast<long long>(shape[1]));
        return 1;
    }
    std::printf("reopened: 75 x %lld in %lld chunks, %lld bytes compressed\n", static_cast<long long>(COLS),
                static_cast<long long>(arr.nchunks()), static_cast<long long>(arr.compressed_bytes()));

    const std::vector<double> block = arr.slice<double>({40, 3}, {60, 7});
    for (int64_t r = 0; r < 20; r++)
        for (int64_t c = 0; c < 4; c++)
            if (block[static_cast<size_t>(r * 4 + c)] != reading(40 + r, 3 + c)) {
                std::fprintf(stderr, "item (%lld, %lld) is wrong\n", static_cast<long long>(r),
                             static_cast<long long>(c));
                return 1;
            }
    std::printf("rows 40..60, columns 3..7: correct\n");

    // Errors are exceptions carrying the C error code.
    try {
        arr.slice<double>({70, 0}, {80, 1});  // past the end
        std::fprintf(stderr, "a slice past the end was accepted\n");
        return 1;
    } catch (const caterva::Error &e) {
        if (e.code() != CATERVA_ERR_INVALID_ARGUMENT) throw;
        std::printf("slice past the end refused: %s\n", e.what());
    }
    return 0;
}  // arr is closed here

int run() {
    caterva::Context ctx(2);
    const std::string path = "readings_cpp.b2frame";
    caterva::Array::remove(ctx, path);
    {
        caterva::Storage storage{{32, COLS}, {8, COLS}, path, true};
        caterva::Array arr = caterva::Array::from_vector(ctx, make_rows(0, 50), {50, COLS}, storage);
    }  // closed here
    {
        caterva::Array arr = caterva::Array::open(ctx, path);
        arr.append(make_rows(50, 25), 0);
    }
    if (int rc = check_file(ctx, path)) return rc;
    caterva::Array::remove(ctx, path);
    std::printf("raii ok\n");
    return 0;
}

}  // namespace

int main() {
    try {
        return run();
    } catch (const std::exception &e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
