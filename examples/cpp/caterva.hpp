// caterva.hpp: a small RAII wrapper around the caterva C API, for the C++
// example (examples/cpp/raii.cpp). Not part of the installed library: copy
// and adapt it. Handles are freed by destructors, errors become exceptions.
#pragma once

#include <caterva.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace caterva {

/// A failed caterva call: what was called and the CATERVA_ERR_* code.
class Error : public std::runtime_error {
  public:
    Error(int code, const std::string &call)
        : std::runtime_error(call + " failed with caterva error " + std::to_string(code)), code_(code) {}
    int code() const noexcept { return code_; }

  private:
    int code_;
};

/// Throw an Error unless `rc` is CATERVA_SUCCEED.
inline void check(int rc, const char *call) {
    if (rc != CATERVA_SUCCEED) throw Error(rc, call);
}

/// A context (compression settings and worker threads). Copies share one
/// caterva_ctx_t, freed with the last copy; arrays keep theirs alive.
class Context {
  public:
    explicit Context(int16_t nthreads = 1, uint8_t complevel = 5) {
        caterva_config_t cfg = CATERVA_CONFIG_DEFAULTS;
        cfg.nthreads = nthreads;
        cfg.complevel = complevel;
        caterva_ctx_t *raw = nullptr;
        check(caterva_ctx_new(&cfg, &raw), "caterva_ctx_new");
        handle_.reset(raw, [](caterva_ctx_t *ctx) { caterva_ctx_free(&ctx); });
    }
    caterva_ctx_t *get() const noexcept { return handle_.get(); }

  private:
    std::shared_ptr<caterva_ctx_t> handle_;
};

/// Partitions and location of a new array.
struct Storage {
    std::vector<int32_t> chunkshape;
    std::vector<int32_t> blockshape;
    std::string urlpath;  ///< empty: in memory
    bool contiguous = true;
};

/// An array handle: move-only, freed (closed) by its destructor.
class Array {
  public:
    Array(const Array &) = delete;
    Array &operator=(const Array &) = delete;
    Array(Array &&other) noexcept : ctx_(other.ctx_), arr_(std::exchange(other.arr_, nullptr)) {}
    Array &operator=(Array &&other) noexcept {
        if (this != &other) {
            release();
            ctx_ = other.ctx_;
            arr_ = std::exchange(other.arr_, nullptr);
        }
        return *this;
    }
    ~Array() { release(); }

    /// A new array of `shape` holding `data` (row-major, items of type T).
    template <typename T>
    static Array from_vector(const Context &ctx, const std::vector<T> &data, const std::vector<int64_t> &shape,
                             const Storage &storage) {
        static_assert(sizeof(T) <= 255, "caterva items are at most 255 bytes");
        caterva_params_t params{};
        params.itemsize = static_cast<uint8_t>(sizeof(T));
        params.ndim = static_cast<int8_t>(shape.size());
        caterva_storage_t st{};
        if (shape.size() > CATERVA_MAX_DIM || storage.chunkshape.size() != shape.size() ||
            storage.blockshape.size() != shape.size())
            throw Error(CATERVA_ERR_INVALID_ARGUMENT, "Array::from_vector (shape and partitions)");
        for (size_t d = 0; d < shape.size(); d++) {
            params.shape[d] = shape[d];
            st.chunkshape[d] = storage.chunkshape[d];
            st.blockshape[d] = storage.blockshape[d];
        }
        std::string urlpath = storage.urlpath;  // the C API takes a char *
        st.urlpath = urlpath.empty() ? nullptr : &urlpath[0];
        st.contiguous = storage.contiguous;
        caterva_array_t *raw = nullptr;
        // The library only reads `data`; the C signature is not const.
        check(caterva_from_buffer(ctx.get(), const_cast<T *>(data.data()), bytes(data), &params, &st, &raw),
              "caterva_from_buffer");
        return Array(ctx, raw);
    }

    /// Open an array persisted at `urlpath`.
    static Array open(const Context &ctx, const std::string &urlpath) {
        caterva_array_t *raw = nullptr;
        check(caterva_open(ctx.get(), urlpath.c_str(), &raw), "caterva_open");
        return Array(ctx, raw);
    }

    /// Remove a persisted array (a file or a sparse-frame directory).
    static void remove(const Context &ctx, const std::string &urlpath) {
        std::string path = urlpath;
        check(caterva_remove(ctx.get(), &path[0]), "caterva_remove");
    }

    std::vector<int64_t> shape() const { return std::vector<int64_t>(arr_->shape, arr_->shape + arr_->ndim); }
    int64_t nchunks() const { return arr_->nchunks; }
    int64_t compressed_bytes() const { return arr_->sc->cbytes; }

    /// The items in [start, stop), row-major.
    template <typename T>
    std::vector<T> slice(const std::vector<int64_t> &start, const std::vector<int64_t> &stop) const {
        check_item<T>();
        if (start.size() != static_cast<size_t>(arr_->ndim) || stop.size() != start.size())
            throw Error(CATERVA_ERR_INVALID_ARGUMENT, "Array::slice (dimensions)");
        std::vector<int64_t> shape(start.size());
        size_t n = 1;
        for (size_t d = 0; d < start.size(); d++) {
            shape[d] = stop[d] > start[d] ? stop[d] - start[d] : 0;
            n *= static_cast<size_t>(shape[d]);
        }
        std::vector<T> out(n);
        check(caterva_get_slice_buffer(ctx_.get(), arr_, const_cast<int64_t *>(start.data()),
                                       const_cast<int64_t *>(stop.data()), out.data(), shape.data(), bytes(out)),
              "caterva_get_slice_buffer");
        return out;
    }

    /// Append `items` (whole hyperplanes, row-major) along `axis`.
    template <typename T>
    void append(const std::vector<T> &items, int8_t axis) {
        check_item<T>();
        check(caterva_append(ctx_.get(), arr_, const_cast<T *>(items.data()), bytes(items), axis), "caterva_append");
    }

    caterva_array_t *get() const noexcept { return arr_; }

  private:
    Array(Context ctx, caterva_array_t *arr) : ctx_(std::move(ctx)), arr_(arr) {}

    void release() noexcept {
        if (arr_) caterva_free(ctx_.get(), &arr_);
    }

    template <typename T>
    void check_item() const {
        if (sizeof(T) != arr_->itemsize) throw Error(CATERVA_ERR_INVALID_ARGUMENT, "item type of the wrong size");
    }

    template <typename T>
    static int64_t bytes(const std::vector<T> &v) {
        return static_cast<int64_t>(v.size() * sizeof(T));
    }

    Context ctx_;
    caterva_array_t *arr_;
};

}  // namespace caterva
