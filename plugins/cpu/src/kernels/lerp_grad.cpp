// CPU lerp_grad: dx = sum(dout * (1 - w)), dy = sum(dout * w) over the dims
// x / y were broadcast along. Each pass reads dout (and w) once: gradients
// of dout's shape are written as it streams by, reduced ones are summed
// without materialising anything of dout's size.
#include "lerp.hpp"
#include "lerp_dispatch.hpp"
#include "lerp_loops.hpp"
#include "lerp_parallel.hpp"

#include <algorithm>
#include <cstring>
#include <new>
#include <vector>

namespace keel::cpu {
namespace {

using namespace plugin;
using namespace lerp;

// Columns a column-reduction task sums at once (its partial sums live on the stack).
constexpr std::int64_t kColumnBlock = 512;
// A reduction is split along its reduced dims only while it has fewer
// blocks of outputs than this; the split depends on shapes alone.
constexpr std::int64_t kMinTasks = 128;
// Fewest terms one split of a reduction sums.
constexpr std::int64_t kMinSplitTerms = 1 << 13;

template <class T>
struct GradPointers {
    const T* dout;
    const T* w;  // null for a scalar weight
    T w_scalar;
    T* dx;
    T* dy;
};

template <class T>
GradPointers<T> pointers(const LerpGradPlan& p, const LerpGradHostBuffers& b) {
    return {static_cast<const T*>(b.dout), p.w.is_scalar ? nullptr : static_cast<const T*>(b.w),
            static_cast<T>(p.w.value), static_cast<T*>(b.dx), static_cast<T*>(b.dy)};
}

// ---- no reduction: one fused pass, two reads and two writes per element --

template <class T, bool WV, bool DX, bool DY>
void elementwise_task(const GradPointers<T>& q, const StridedLayout& l, std::int64_t begin,
                      std::int64_t end) {
    for_each_run(l, begin, end, [&](const std::int64_t* off, std::int64_t n) {
        const T* wr = q.w ? q.w + off[kGradW] : nullptr;
        const T wv = (WV || !q.w) ? q.w_scalar : wr[0];
        const std::int64_t o = off[kGradDout];
        grad_span<T, WV, DX, DY>(q.dout + o, wr, wv, DX ? q.dx + o : nullptr,
                                 DY ? q.dy + o : nullptr, n);
    });
}

template <class T>
void run_elementwise(const GradPointers<T>& q, const LerpGradPass& pass) {
    const StridedLayout& l = pass.layout;
    with_bool(q.w && l.inner_stride(kGradW) != 0, [&](auto wv) {
        with_bool(pass.dx == GradOutput::elementwise, [&](auto dx) {
            with_bool(pass.dy == GradOutput::elementwise, [&](auto dy) {
                parallel_tasks(ceil_div(l.numel, kTaskElements), [&](std::int64_t t) {
                    elementwise_task<T, wv(), dx(), dy()>(
                        q, l, t * kTaskElements, std::min(l.numel, (t + 1) * kTaskElements));
                });
            });
        });
    });
}

// ---- reductions -----------------------------------------------------------

// How a reduction is cut into tasks: blocks of outputs times splits of the
// reduced rows. Fixed by the shapes alone, so sums are reproducible.
struct ReduceSplit {
    std::int64_t rows = 1;            // reduce.numel
    std::int64_t outer_per_block = 1; // outer indices per block
    std::int64_t columns = 1;         // columns per block (column reduction)
    std::int64_t column_blocks = 1;
    std::int64_t blocks = 1;
    std::int64_t splits = 1;
    // Row reduction: terms (rows * inner) per split; column: rows per split.
    std::int64_t per_split = 1;
};

ReduceSplit plan_split(const ReductionLayout& r) {
    ReduceSplit s;
    s.rows = r.reduce.numel;
    std::int64_t block_terms = 0;  // terms one block sums, before splitting
    std::int64_t split_units = 0;  // what a split cuts: terms (row) or rows (column)
    if (r.inner_reduced) {
        const std::int64_t terms = r.terms_per_target();
        s.outer_per_block = std::max<std::int64_t>(1, kTaskElements / terms);
        s.blocks = ceil_div(r.outer.numel, s.outer_per_block);
        block_terms = terms;
        split_units = terms;
    } else {
        s.columns = std::min(r.inner, kColumnBlock);
        s.column_blocks = ceil_div(r.inner, s.columns);
        s.outer_per_block = s.column_blocks > 1
                                ? 1
                                : std::max<std::int64_t>(1, kTaskElements / (s.rows * r.inner));
        s.blocks = ceil_div(r.outer.numel, s.outer_per_block) * s.column_blocks;
        block_terms = s.rows * s.columns;
        split_units = s.rows;
    }
    if (s.blocks < kMinTasks) {
        s.splits = std::min(ceil_div(kMinTasks, s.blocks),
                            std::max<std::int64_t>(1, block_terms / kMinSplitTerms));
        s.splits = std::clamp<std::int64_t>(s.splits, 1, split_units);
    }
    s.per_split = ceil_div(split_units, s.splits);
    s.splits = ceil_div(split_units, s.per_split);
    return s;
}

// Where a task's sums go: straight into the gradients (one split), or into
// partials[(target * splits + split) * 2 + {0: dx, 1: dy}].
template <class T>
struct ReduceOutput {
    T* dx;  // reduced dx, or null
    T* dy;  // reduced dy, or null
    Acc* partials;
    std::int64_t splits;

    void store(std::int64_t target, std::int64_t split, Acc sx, Acc sy) const {
        if (partials) {
            Acc* p = partials + (target * splits + split) * 2;
            p[0] = sx;
            p[1] = sy;
            return;
        }
        if (dx) dx[target] = static_cast<T>(sx);
        if (dy) dy[target] = static_cast<T>(sy);
    }
};

// Innermost dim reduced: each output sums its rows; a split covers a range
// of the output's terms (rows * inner, row-major), so even one long row is
// spread over several tasks.
template <class T, bool WV, GradOutput DX, GradOutput DY>
void row_task(const GradPointers<T>& q, const ReductionLayout& r, const ReduceSplit& s,
              const ReduceOutput<T>& out, std::int64_t task) {
    const std::int64_t block = task / s.splits, split = task % s.splits;
    const std::int64_t j0 = block * s.outer_per_block;
    const std::int64_t j1 = std::min(r.outer.numel, j0 + s.outer_per_block);
    const std::int64_t terms = r.terms_per_target();
    const std::int64_t t0 = split * s.per_split;
    const std::int64_t t1 = std::min(terms, t0 + s.per_split);
    T* dx = DX == GradOutput::elementwise ? q.dx : nullptr;
    T* dy = DY == GradOutput::elementwise ? q.dy : nullptr;
    LayoutCursor outer(r.outer, j0);
    for (std::int64_t j = j0; j < j1; ++j, outer.next()) {
        Acc sx = 0, sy = 0;
        std::int64_t t = t0, col = t0 % r.inner;
        LayoutCursor rows(r.reduce, t0 / r.inner);
        while (t < t1) {
            const std::int64_t n = std::min(t1 - t, r.inner - col);
            const std::int64_t o = outer.offset(kGradDout) + rows.offset(kGradDout) + col;
            const T* wr = q.w ? q.w + outer.offset(kGradW) + rows.offset(kGradW) + col * r.inner_stride[kGradW]
                              : nullptr;
            const T wv = (WV || !q.w) ? q.w_scalar : wr[0];
            grad_reduce_span<T, WV, DX, DY, false>(q.dout + o, wr, wv, dx ? dx + o : nullptr,
                                                   dy ? dy + o : nullptr, n, nullptr, nullptr, sx, sy);
            t += n;
            col = 0;
            rows.next();
        }
        out.store(j, split, sx, sy);
    }
}

// Innermost dim kept: every task sums rows of up to kColumnBlock columns.
template <class T, bool WV, GradOutput DX, GradOutput DY>
void column_task(const GradPointers<T>& q, const ReductionLayout& r, const ReduceSplit& s,
                 const ReduceOutput<T>& out, std::int64_t task) {
    const std::int64_t block = task / s.splits, split = task % s.splits;
    const std::int64_t outer_block = block / s.column_blocks;
    const std::int64_t c0 = (block % s.column_blocks) * s.columns;
    const std::int64_t n = std::min(r.inner, c0 + s.columns) - c0;
    const std::int64_t j0 = outer_block * s.outer_per_block;
    const std::int64_t j1 = std::min(r.outer.numel, j0 + s.outer_per_block);
    const std::int64_t r0 = split * s.per_split;
    const std::int64_t r1 = std::min(s.rows, r0 + s.per_split);
    T* dx = DX == GradOutput::elementwise ? q.dx : nullptr;
    T* dy = DY == GradOutput::elementwise ? q.dy : nullptr;
    Acc ax[kColumnBlock], ay[kColumnBlock];
    Acc unused = 0;
    LayoutCursor outer(r.outer, j0);
    for (std::int64_t j = j0; j < j1; ++j, outer.next()) {
        std::fill_n(ax, n, Acc(0));
        std::fill_n(ay, n, Acc(0));
        LayoutCursor rows(r.reduce, r0);
        for (std::int64_t row = r0; row < r1; ++row, rows.next()) {
            const std::int64_t o = outer.offset(kGradDout) + rows.offset(kGradDout) + c0;
            const T* wr = q.w ? q.w + outer.offset(kGradW) + rows.offset(kGradW) +
                                    c0 * r.inner_stride[kGradW]
                              : nullptr;
            const T wv = (WV || !q.w) ? q.w_scalar : wr[0];
            grad_reduce_span<T, WV, DX, DY, true>(q.dout + o, wr, wv, dx ? dx + o : nullptr,
                                                  dy ? dy + o : nullptr, n, ax, ay, unused,
                                                  unused);
        }
        const std::int64_t t0 = j * r.inner + c0;
        for (std::int64_t c = 0; c < n; ++c) out.store(t0 + c, split, ax[c], ay[c]);
    }
}

template <class T>
Result<void> run_reduction(const GradPointers<T>& q, const LerpGradPass& pass) {
    const ReductionLayout& r = pass.reduction;
    const ReduceSplit s = plan_split(r);
    ReduceOutput<T> out{pass.dx == GradOutput::reduced ? q.dx : nullptr,
                        pass.dy == GradOutput::reduced ? q.dy : nullptr, nullptr, s.splits};
    const std::int64_t targets = r.targets();
    std::vector<Acc> partials;
    if (s.splits > 1) {
        try {
            partials.resize(static_cast<std::size_t>(targets * s.splits * 2));
        } catch (const std::bad_alloc&) {
            return Error(KEEL_STATUS_OUT_OF_MEMORY,
                         "[lerp_grad] no host memory for " + std::to_string(targets * s.splits * 2) +
                             " partial sums");
        }
        out.partials = partials.data();
    }
    with_bool(q.w && r.inner_stride[kGradW] != 0, [&](auto wv) {
        with_grad_output(pass.dx, [&](auto dx) {
            with_grad_output(pass.dy, [&](auto dy) {
                parallel_tasks(s.blocks * s.splits, [&](std::int64_t t) {
                    if (r.inner_reduced)
                        row_task<T, wv(), dx(), dy()>(q, r, s, out, t);
                    else
                        column_task<T, wv(), dx(), dy()>(q, r, s, out, t);
                });
            });
        });
    });
    if (s.splits > 1) {
        // Combine the splits of each output in split order.
        const ReduceOutput<T> final_out{out.dx, out.dy, nullptr, 1};
        parallel_tasks(ceil_div(targets, kTaskElements), [&](std::int64_t t) {
            const std::int64_t end = std::min(targets, (t + 1) * kTaskElements);
            for (std::int64_t j = t * kTaskElements; j < end; ++j) {
                const Acc* p = partials.data() + j * s.splits * 2;
                Acc sx = 0, sy = 0;
                for (std::int64_t k = 0; k < s.splits; ++k) {
                    sx += p[2 * k];
                    sy += p[2 * k + 1];
                }
                final_out.store(j, 0, sx, sy);
            }
        });
    }
    return ok();
}

template <class T>
Result<void> run_typed(const LerpGradPlan& p, const LerpGradHostBuffers& b) {
    if (p.numel == 0) {
        // Sums over nothing.
        if (b.dx && p.dx.size) std::memset(b.dx, 0, p.dx.size);
        if (b.dy && p.dy.size) std::memset(b.dy, 0, p.dy.size);
        return ok();
    }
    const GradPointers<T> q = pointers<T>(p, b);
    for (int i = 0; i < p.pass_count; ++i) {
        const LerpGradPass& pass = p.passes[static_cast<std::size_t>(i)];
        if (pass.reduces())
            KEEL_TRY(run_reduction(q, pass));
        else
            run_elementwise(q, pass);
    }
    return ok();
}

}  // namespace

Result<void> run_lerp_grad(const LerpGradPlan& plan, const LerpGradHostBuffers& buffers) {
    switch (plan.dtype) {
        case KEEL_DTYPE_F32: return run_typed<float>(plan, buffers);
        case KEEL_DTYPE_F64: return run_typed<double>(plan, buffers);
        default:
            return Error(KEEL_STATUS_UNIMPLEMENTED,
                         std::string("[lerp_grad] dtype ") + dtype_name(plan.dtype) +
                             " is not implemented on the CPU device");
    }
}

}  // namespace keel::cpu
