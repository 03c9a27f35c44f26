#include "lerp_reference.hpp"

#include <keel/base/half.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace keel::test {
namespace {

// Walks the elements of a shape `out` in order and keeps, for each operand
// shape broadcast to it, the index of the operand's element (naive
// bookkeeping, independent of the kernels' planning).
class BroadcastWalk {
public:
    BroadcastWalk(const Dims& out, const std::vector<Dims>& ops)
        : out_(out), coord_(out.size(), 0), index_(ops.size(), 0), step_(ops.size(), Dims(out.size(), 0)) {
        for (std::size_t o = 0; o < ops.size(); ++o) {
            const std::size_t shift = out.size() - ops[o].size();
            std::int64_t stride = 1;
            for (std::size_t k = out.size(); k-- > shift;) {
                const std::int64_t n = ops[o][k - shift];
                step_[o][k] = n == 1 ? 0 : stride;
                stride *= n;
            }
        }
    }
    [[nodiscard]] std::size_t operator[](std::size_t op) const { return static_cast<std::size_t>(index_[op]); }
    void next() {
        for (std::size_t k = out_.size(); k-- > 0;) {
            ++coord_[k];
            for (std::size_t o = 0; o < index_.size(); ++o) index_[o] += step_[o][k];
            if (coord_[k] < out_[k]) return;
            for (std::size_t o = 0; o < index_.size(); ++o) index_[o] -= coord_[k] * step_[o][k];
            coord_[k] = 0;
        }
    }

private:
    Dims out_, coord_, index_;
    std::vector<Dims> step_;
};

template <class T>
void put(std::vector<std::byte>& out, std::size_t i, T v) {
    std::memcpy(out.data() + i * sizeof(T), &v, sizeof(T));
}
template <class T>
T get(const std::vector<std::byte>& in, std::size_t i) {
    T v;
    std::memcpy(&v, in.data() + i * sizeof(T), sizeof(T));
    return v;
}

}  // namespace

std::int64_t numel(const Dims& d) {
    std::int64_t n = 1;
    for (std::int64_t v : d) n *= v;
    return n;
}

std::string dims_string(const Dims& d) {
    std::string s = "[";
    for (std::size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + std::to_string(d[i]);
    return s + "]";
}

Dims broadcast(const std::vector<Dims>& shapes) {
    std::size_t rank = 0;
    for (const Dims& s : shapes) rank = std::max(rank, s.size());
    Dims out(rank, 1);
    for (const Dims& s : shapes)
        for (std::size_t k = 0; k < s.size(); ++k) {
            std::int64_t& o = out[rank - s.size() + k];
            if (s[k] != 1) {
                if (o != 1 && o != s[k]) throw std::invalid_argument("shapes do not broadcast");
                o = s[k];
            }
        }
    return out;
}

std::vector<std::byte> encode(keel_dtype dtype, const std::vector<double>& values) {
    std::vector<std::byte> out(values.size() * (dtype == KEEL_DTYPE_F64 ? 8 : dtype == KEEL_DTYPE_F32 ? 4 : 2));
    for (std::size_t i = 0; i < values.size(); ++i) {
        switch (dtype) {
            case KEEL_DTYPE_F64: put(out, i, values[i]); break;
            case KEEL_DTYPE_F32: put(out, i, static_cast<float>(values[i])); break;
            case KEEL_DTYPE_F16: put(out, i, float_to_half(static_cast<float>(values[i]))); break;
            case KEEL_DTYPE_BF16: put(out, i, float_to_bf16(static_cast<float>(values[i]))); break;
            default: throw std::invalid_argument("encode: not a lerp dtype");
        }
    }
    return out;
}

std::vector<double> decode(keel_dtype dtype, const std::vector<std::byte>& bytes) {
    const std::size_t es = dtype == KEEL_DTYPE_F64 ? 8 : dtype == KEEL_DTYPE_F32 ? 4 : 2;
    std::vector<double> out(bytes.size() / es);
    for (std::size_t i = 0; i < out.size(); ++i) {
        switch (dtype) {
            case KEEL_DTYPE_F64: out[i] = get<double>(bytes, i); break;
            case KEEL_DTYPE_F32: out[i] = get<float>(bytes, i); break;
            case KEEL_DTYPE_F16: out[i] = half_to_float(get<std::uint16_t>(bytes, i)); break;
            case KEEL_DTYPE_BF16: out[i] = bf16_to_float(get<std::uint16_t>(bytes, i)); break;
            default: throw std::invalid_argument("decode: not a lerp dtype");
        }
    }
    return out;
}

std::vector<double> random_values(keel_dtype dtype, std::int64_t n, double lo, double hi,
                                  std::mt19937_64& rng) {
    std::uniform_real_distribution<double> dist(lo, hi);
    std::vector<double> v(static_cast<std::size_t>(n));
    for (double& x : v) x = dist(rng);
    return decode(dtype, encode(dtype, v));
}

double round_to(keel_dtype dtype, double value) {
    switch (dtype) {
        case KEEL_DTYPE_F64: return value;
        case KEEL_DTYPE_F32: return static_cast<float>(value);
        case KEEL_DTYPE_F16: return half_to_float(float_to_half(static_cast<float>(value)));
        case KEEL_DTYPE_BF16: return bf16_to_float(float_to_bf16(static_cast<float>(value)));
        default: throw std::invalid_argument("round_to: not a lerp dtype");
    }
}

RefLerp reference_lerp(const Dims& xs, const std::vector<double>& x, const Dims& ys,
                       const std::vector<double>& y, const RefWeight& w) {
    RefLerp r;
    r.shape = w.scalar ? broadcast({xs, ys}) : broadcast({xs, ys, w.shape});
    const std::int64_t n = numel(r.shape);
    r.out.resize(static_cast<std::size_t>(n));
    r.scale.resize(static_cast<std::size_t>(n));
    BroadcastWalk at(r.shape, {xs, ys, w.scalar ? Dims{} : w.shape});
    for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i, at.next()) {
        const double a = x[at[0]];
        const double b = y[at[1]];
        const double t = w.scalar ? *w.scalar : w.values[at[2]];
        r.out[i] = a + t * (b - a);
        r.scale[i] = (std::fabs(a) + std::fabs(b)) * std::max(1.0, std::fabs(t));
    }
    return r;
}

RefGrad reference_lerp_grad(const Dims& xs, const Dims& ys, const RefWeight& w,
                            const Dims& dout_shape, const std::vector<double>& dout) {
    RefGrad g;
    const auto size = [](const Dims& d) { return static_cast<std::size_t>(numel(d)); };
    g.dx.assign(size(xs), 0.0);
    g.dy.assign(size(ys), 0.0);
    g.dx_abs.assign(size(xs), 0.0);
    g.dy_abs.assign(size(ys), 0.0);
    g.dx_terms.assign(size(xs), 0);
    g.dy_terms.assign(size(ys), 0);
    const std::int64_t n = numel(dout_shape);
    BroadcastWalk at(dout_shape, {xs, ys, w.scalar ? Dims{} : w.shape});
    for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i, at.next()) {
        const double d = dout[i];
        const double t = w.scalar ? *w.scalar : w.values[at[2]];
        const std::size_t xi = at[0], yi = at[1];
        g.dx[xi] += d * (1.0 - t);
        g.dx_abs[xi] += std::fabs(d * (1.0 - t));
        ++g.dx_terms[xi];
        g.dy[yi] += d * t;
        g.dy_abs[yi] += std::fabs(d * t);
        ++g.dy_terms[yi];
    }
    return g;
}

}  // namespace keel::test
