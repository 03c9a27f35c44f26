#include <keel/plugin/broadcast.hpp>

namespace keel::plugin {
namespace {

Error invalid(std::string message) { return Error(KEEL_STATUS_INVALID_ARGUMENT, std::move(message)); }

std::string named(const NamedShape& s) { return std::string(s.role) + " " + shape_string(s.dims); }

// Operand dim aligned to the right of a space of rank `rank`: 1 where absent.
std::int64_t aligned_dim(std::span<const std::int64_t> dims, int rank, int d) noexcept {
    const int shift = rank - static_cast<int>(dims.size());
    return d < shift ? 1 : dims[static_cast<std::size_t>(d - shift)];
}

}  // namespace

std::string shape_string(std::span<const std::int64_t> dims) {
    std::string out = "[";
    for (std::size_t i = 0; i < dims.size(); ++i) {
        if (i) out += ", ";
        out += std::to_string(dims[i]);
    }
    return out + "]";
}

Result<std::int64_t> checked_numel(const NamedShape& shape) {
    if (shape.dims.size() > static_cast<std::size_t>(kMaxRank))
        return invalid(named(shape) + " has " + std::to_string(shape.dims.size()) +
                       " dims, at most " + std::to_string(kMaxRank) + " are supported");
    std::int64_t n = 1;
    bool overflow = false;
    for (std::int64_t d : shape.dims) {
        if (d < 0) return invalid(named(shape) + " has a negative dim");
        overflow = overflow || __builtin_mul_overflow(n, d, &n);
    }
    // A zero dim makes the count 0 even if a partial product overflowed.
    for (std::int64_t d : shape.dims)
        if (d == 0) return std::int64_t{0};
    if (overflow) return invalid(named(shape) + " has more than 2^63 elements");
    return n;
}

Result<Shape> broadcast_shapes(std::span<const NamedShape> shapes) {
    int rank = 0;
    for (const NamedShape& s : shapes) {
        KEEL_TRY(checked_numel(s));
        rank = std::max(rank, static_cast<int>(s.dims.size()));
    }
    Shape out(static_cast<std::size_t>(rank), 1);
    for (int d = 0; d < rank; ++d) {
        const NamedShape* owner = nullptr;  // the first shape with a dim != 1 here
        for (const NamedShape& s : shapes) {
            const std::int64_t v = aligned_dim(s.dims, rank, d);
            if (v == 1) continue;
            if (owner == nullptr) {
                owner = &s;
                out[static_cast<std::size_t>(d)] = v;
            } else if (v != out[static_cast<std::size_t>(d)]) {
                return invalid(named(*owner) + " and " + named(s) + " do not broadcast (dim " +
                               std::to_string(d - rank) + ": " +
                               std::to_string(out[static_cast<std::size_t>(d)]) + " vs " +
                               std::to_string(v) + ")");
            }
        }
    }
    return out;
}

std::array<std::int64_t, kMaxOperands> StridedLayout::offsets_at(std::int64_t index) const noexcept {
    std::array<std::int64_t, kMaxOperands> off{};
    for (int d = rank - 1; d >= 0; --d) {
        const std::int64_t c = index % size[d];
        index /= size[d];
        for (int op = 0; op < operands; ++op) off[op] += c * stride[op][d];
    }
    return off;
}

void coalesce(StridedLayout& l) noexcept {
    int out = 0;
    for (int d = 0; d < l.rank; ++d) {
        bool merge = out > 0;
        for (int op = 0; merge && op < l.operands; ++op)
            merge = l.stride[op][out - 1] == l.stride[op][d] * l.size[d];
        if (merge) {
            l.size[out - 1] *= l.size[d];
            for (int op = 0; op < l.operands; ++op) l.stride[op][out - 1] = l.stride[op][d];
        } else {
            l.size[out] = l.size[d];
            for (int op = 0; op < l.operands; ++op) l.stride[op][out] = l.stride[op][d];
            ++out;
        }
    }
    for (int d = out; d < l.rank; ++d) {
        l.size[d] = 0;
        for (int op = 0; op < l.operands; ++op) l.stride[op][d] = 0;
    }
    l.rank = out;
}

Result<StridedLayout> make_layout(const NamedShape& space, std::span<const NamedShape> operands) {
    KEEL_TRY_ASSIGN(const std::int64_t numel, checked_numel(space));
    if (operands.size() > static_cast<std::size_t>(kMaxOperands))
        return Error(KEEL_STATUS_INTERNAL, "make_layout: more than " +
                                               std::to_string(kMaxOperands) + " operands");
    const int rank = static_cast<int>(space.dims.size());
    for (const NamedShape& o : operands) {
        KEEL_TRY(checked_numel(o));
        if (static_cast<int>(o.dims.size()) > rank)
            return invalid(named(o) + " has more dims than " + named(space));
        for (int d = 0; d < rank; ++d) {
            const std::int64_t v = aligned_dim(o.dims, rank, d);
            if (v != 1 && v != space.dims[static_cast<std::size_t>(d)])
                return invalid(named(o) + " does not broadcast to " + named(space) + " (dim " +
                               std::to_string(d - rank) + ")");
        }
    }

    StridedLayout l;
    l.operands = static_cast<int>(operands.size());
    l.numel = numel;
    if (numel <= 1) return l;  // rank 0: empty, or a single element at offset 0

    // Each operand's dense row-major strides over the aligned dims.
    std::array<std::array<std::int64_t, kMaxRank>, kMaxOperands> dense{};
    for (int op = 0; op < l.operands; ++op) {
        std::int64_t s = 1;
        for (int d = rank - 1; d >= 0; --d) {
            const std::int64_t v = aligned_dim(operands[static_cast<std::size_t>(op)].dims, rank, d);
            dense[op][d] = v == 1 ? 0 : s;  // broadcast (or size-1) dims step by 0
            s *= v;
        }
    }
    for (int d = 0; d < rank; ++d) {
        const std::int64_t n = space.dims[static_cast<std::size_t>(d)];
        if (n == 1) continue;
        l.size[l.rank] = n;
        for (int op = 0; op < l.operands; ++op) l.stride[op][l.rank] = dense[op][d];
        ++l.rank;
    }
    coalesce(l);
    return l;
}

ReductionLayout split_reduction(const StridedLayout& full, int target) {
    ReductionLayout r;
    r.target = target;
    r.outer.operands = r.reduce.operands = full.operands;
    r.outer.numel = r.reduce.numel = 1;
    if (full.rank == 0) return r;  // one element, summed into one target
    const int last = full.rank - 1;
    r.inner = full.size[last];
    for (int op = 0; op < full.operands; ++op) r.inner_stride[op] = full.stride[op][last];
    r.inner_reduced = full.stride[target][last] == 0;
    for (int d = 0; d < last; ++d) {
        StridedLayout& part = full.stride[target][d] != 0 ? r.outer : r.reduce;
        part.size[part.rank] = full.size[d];
        for (int op = 0; op < full.operands; ++op) part.stride[op][part.rank] = full.stride[op][d];
        ++part.rank;
        part.numel *= full.size[d];
    }
    coalesce(r.outer);
    coalesce(r.reduce);
    return r;
}

}  // namespace keel::plugin
