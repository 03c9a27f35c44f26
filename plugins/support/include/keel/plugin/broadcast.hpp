// NumPy broadcasting and iteration-space planning, shared by every plugin's
// elementwise and reduction kernels. A kernel never walks the user's shapes:
// it walks a coalesced StridedLayout (adjacent dims merged wherever every
// operand allows, size-1 dims dropped), so that "no broadcast" becomes one
// flat dim and most broadcasts become two or three dims. Reductions are
// split once more (ReductionLayout) into kept dims, reduced dims and the
// innermost dim, so a device implements only a row kernel (innermost dim
// reduced) and a column kernel (innermost dim kept).
//
// Everything here is plain data on the host; the structs are trivially
// copyable, so a device plugin can copy them into kernel parameters. Values
// may be shared between threads read-only.
#pragma once

#include <keel/result.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace keel::plugin {

// Most dims a shape may have (user-facing limit, checked).
inline constexpr int kMaxRank = 16;
// Most operands one layout describes.
inline constexpr int kMaxOperands = 4;

using Shape = std::vector<std::int64_t>;

// A shape and the role it plays, so errors can name it ("x", "w").
struct NamedShape {
    std::string_view role;
    std::span<const std::int64_t> dims;
};

// "[2, 3, 4]"
[[nodiscard]] std::string shape_string(std::span<const std::int64_t> dims);

// Checks rank <= kMaxRank and every dim >= 0; returns the element count, or
// INVALID_ARGUMENT if it overflows int64.
[[nodiscard]] Result<std::int64_t> checked_numel(const NamedShape& shape);

// The NumPy broadcast shape of `shapes` (right-aligned; each dim equal or 1).
// INVALID_ARGUMENT names the two shapes and the dim that disagree.
[[nodiscard]] Result<Shape> broadcast_shapes(std::span<const NamedShape> shapes);

// The iteration over a contiguous index space (`numel` elements in row-major
// order) and where each operand's element lives for each index: element i at
// coordinates c (outermost first) is at offset sum_d c[d] * stride[op][d] of
// operand op. A stride of 0 means the operand is broadcast along that dim.
//   numel == 0: nothing to iterate (rank 0).
//   numel == 1: rank 0, every offset 0.
struct StridedLayout {
    int rank = 0;
    int operands = 0;
    std::int64_t numel = 0;
    std::array<std::int64_t, kMaxRank> size{};  // outermost first, each > 1
    std::array<std::array<std::int64_t, kMaxRank>, kMaxOperands> stride{};

    // Size of the innermost dim (1 for rank 0).
    [[nodiscard]] std::int64_t inner_size() const noexcept { return rank ? size[rank - 1] : 1; }
    // Operand op's stride along the innermost dim (0 or 1 for dense operands).
    [[nodiscard]] std::int64_t inner_stride(int op) const noexcept {
        return rank ? stride[op][rank - 1] : 0;
    }
    // True when operand op is visited in its own memory order, one element
    // per index (offset == index): the "no broadcast" fast case.
    [[nodiscard]] bool is_identity(int op) const noexcept {
        return rank == 0 || (rank == 1 && stride[op][0] == 1);
    }
    // True when operand op has the same offset for every index.
    [[nodiscard]] bool is_uniform(int op) const noexcept {
        for (int d = 0; d < rank; ++d)
            if (stride[op][d] != 0) return false;
        return true;
    }
    // Offsets of every operand at flat index `index` (< numel).
    [[nodiscard]] std::array<std::int64_t, kMaxOperands> offsets_at(std::int64_t index) const noexcept;
};

// The layout of iterating over `space` (the shape of a dense row-major
// tensor) with `operands`, each of which must broadcast to `space` (fewer or
// equal dims; each dim 1 or equal), else INVALID_ARGUMENT naming both.
// Operands are dense row-major tensors of their own shape; a reduced output
// is described the same way (stride 0 along the dims it is summed over).
// Adjacent dims are merged wherever every operand allows it and size-1 dims
// are dropped.
[[nodiscard]] Result<StridedLayout> make_layout(const NamedShape& space,
                                                std::span<const NamedShape> operands);

// Merges adjacent dims of `layout` wherever every operand allows it.
void coalesce(StridedLayout& layout) noexcept;

// A reduction's iteration space split for kernels: element (o, r, i) with o
// over the kept dims except the innermost (`outer`), r over the reduced dims
// except the innermost (`reduce`) and i along the innermost dim, lives at
//     outer.offsets(o) + reduce.offsets(r) + i * inner_stride
// for every operand. The `target` operand (the reduced output) is dense in
// the kept dims: its element for (o, i) is o (row reduction: the innermost
// dim is reduced) or o * inner + i (column reduction: it is kept).
struct ReductionLayout {
    StridedLayout outer;
    StridedLayout reduce;
    std::int64_t inner = 1;
    std::array<std::int64_t, kMaxOperands> inner_stride{};
    bool inner_reduced = false;
    int target = 0;

    // Elements of the reduced output.
    [[nodiscard]] std::int64_t targets() const noexcept {
        return outer.numel * (inner_reduced ? 1 : inner);
    }
    // Input elements summed into each output element.
    [[nodiscard]] std::int64_t terms_per_target() const noexcept {
        return reduce.numel * (inner_reduced ? inner : 1);
    }
};

// Splits `full` (numel > 0) for a reduction into operand `target`, whose
// stride is 0 exactly along the dims it is summed over. `full` must come
// from make_layout with the target among its operands.
[[nodiscard]] ReductionLayout split_reduction(const StridedLayout& full, int target);

// Visits the flat index range [begin, end) of `layout` as runs along the
// innermost dim: fn(const std::int64_t* offsets, std::int64_t length), where
// offsets[op] is operand op's offset at the run's first element and the run
// advances each operand by layout.inner_stride(op) per element. Host code.
template <class Fn>
void for_each_run(const StridedLayout& layout, std::int64_t begin, std::int64_t end, Fn&& fn) {
    if (begin >= end) return;
    const int rank = layout.rank;
    const int ops = layout.operands;
    if (rank == 0) {
        std::array<std::int64_t, kMaxOperands> zero{};
        fn(zero.data(), end - begin);
        return;
    }
    std::array<std::int64_t, kMaxRank> coord{};
    std::array<std::int64_t, kMaxOperands> off{};
    std::int64_t rest = begin;
    for (int d = rank - 1; d >= 0; --d) {
        coord[d] = rest % layout.size[d];
        rest /= layout.size[d];
        for (int op = 0; op < ops; ++op) off[op] += coord[d] * layout.stride[op][d];
    }
    const int last = rank - 1;
    std::int64_t pos = begin;
    while (pos < end) {
        const std::int64_t len = std::min(layout.size[last] - coord[last], end - pos);
        fn(off.data(), len);
        pos += len;
        if (pos >= end) break;
        // Step to the start of the next run: innermost coordinate wraps to 0.
        for (int op = 0; op < ops; ++op) off[op] -= coord[last] * layout.stride[op][last];
        coord[last] = 0;
        for (int d = last - 1; d >= 0; --d) {
            ++coord[d];
            for (int op = 0; op < ops; ++op) off[op] += layout.stride[op][d];
            if (coord[d] < layout.size[d]) break;
            for (int op = 0; op < ops; ++op) off[op] -= coord[d] * layout.stride[op][d];
            coord[d] = 0;
        }
    }
}

// An odometer over a layout's coordinates that keeps every operand's offset
// up to date: O(1) amortised per step, for host loops over rows.
class LayoutCursor {
public:
    LayoutCursor(const StridedLayout& layout, std::int64_t start) noexcept : layout_(&layout) {
        std::int64_t rest = start;
        for (int d = layout.rank - 1; d >= 0; --d) {
            coord_[d] = rest % layout.size[d];
            rest /= layout.size[d];
            for (int op = 0; op < layout.operands; ++op)
                off_[op] += coord_[d] * layout.stride[op][d];
        }
    }
    LayoutCursor(const LayoutCursor&) = default;
    LayoutCursor& operator=(const LayoutCursor&) = default;

    [[nodiscard]] std::int64_t offset(int op) const noexcept { return off_[op]; }

    // Moves to the next index (wrapping to 0 after the last).
    void next() noexcept {
        const StridedLayout& l = *layout_;
        for (int d = l.rank - 1; d >= 0; --d) {
            ++coord_[d];
            for (int op = 0; op < l.operands; ++op) off_[op] += l.stride[op][d];
            if (coord_[d] < l.size[d]) return;
            for (int op = 0; op < l.operands; ++op) off_[op] -= coord_[d] * l.stride[op][d];
            coord_[d] = 0;
        }
    }

private:
    const StridedLayout* layout_;
    std::array<std::int64_t, kMaxRank> coord_{};
    std::array<std::int64_t, kMaxOperands> off_{};
};

}  // namespace keel::plugin
