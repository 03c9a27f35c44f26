#include <keel/plugin/lerp_args.hpp>

#include <algorithm>

namespace keel::plugin {
namespace {

bool contains(std::span<const keel_dtype> set, keel_dtype d) {
    return std::find(set.begin(), set.end(), d) != set.end();
}

std::string arg_name(std::size_t i, const char* role) {
    return "argument " + std::to_string(i) + " (" + role + ")";
}

// The element type of every tensor of the launch: x's.
Result<keel_dtype> parse_dtype(const LaunchArgsView& a, std::span<const keel_dtype> implemented) {
    KEEL_TRY_ASSIGN(const BufferArg x, a.buffer(0, "x", {}, /*optional=*/true));
    if (!contains(kLerpDtypes, x.dtype))
        return a.invalid(arg_name(0, "x") + ": dtype " + dtype_name(x.dtype) +
                         " is not supported by " + a.kernel_name() + " (" +
                         dtype_list(kLerpDtypes) + ")");
    if (!contains(implemented, x.dtype))
        return Error(KEEL_STATUS_UNIMPLEMENTED,
                     "[" + a.kernel_name() + "] dtype " + dtype_name(x.dtype) +
                         " is not implemented on this device (implemented: " +
                         dtype_list(implemented) + ")");
    return x.dtype;
}

// A buffer of `dtype`; absent (0, 0) is accepted here and judged by check_size.
Result<BufferArg> parse_buffer(const LaunchArgsView& a, std::size_t i, const char* role,
                               keel_dtype dtype) {
    return a.buffer(i, role, std::span<const keel_dtype>(&dtype, 1), /*optional=*/true);
}

Result<LerpWeight> parse_weight(const LaunchArgsView& a, std::size_t i, keel_dtype dtype) {
    LerpWeight w;
    if (i < a.count() && a.kind(i) == KEEL_ARG_SCALAR) {
        KEEL_TRY_ASSIGN(w.value, a.scalar_f64(i, "w"));
        w.is_scalar = true;
        return w;
    }
    KEEL_TRY_ASSIGN(w.buffer, parse_buffer(a, i, "w", dtype));
    return w;
}

Result<Shape> parse_shape(const LaunchArgsView& a, std::size_t i, const char* role) {
    KEEL_TRY_ASSIGN(Shape s, a.int_array(i, role, kMaxRank));
    Result<std::int64_t> n = checked_numel({role, s});
    if (!n.ok()) return a.invalid(arg_name(i, role) + ": " + n.error().message());
    return s;
}

std::int64_t numel_of(const Shape& s) {
    std::int64_t n = 1;
    for (std::int64_t d : s) n *= d;  // checked by parse_shape
    return n;
}

// The buffer holds exactly `numel` elements; absent only when it may be
// (`optional`) or when it holds nothing.
Result<void> check_size(const LaunchArgsView& a, std::size_t i, const char* role,
                        const BufferArg& b, std::int64_t numel, keel_dtype dtype,
                        bool optional) {
    if (b.absent() && (optional || numel == 0)) return ok();
    const std::size_t es = dtype_size(dtype);
    std::uint64_t expected = 0;
    if (__builtin_mul_overflow(static_cast<std::uint64_t>(numel), es, &expected))
        return a.invalid(arg_name(i, role) + ": " + std::to_string(numel) +
                         " elements do not fit in 2^64 bytes");
    if (b.absent())
        return a.invalid(arg_name(i, role) + " is an absent buffer, expected " +
                         std::to_string(expected) + " bytes");
    if (b.size != expected)
        return a.invalid(arg_name(i, role) + ": size " + std::to_string(b.size) +
                         " bytes, expected " + std::to_string(expected) + " (" +
                         std::to_string(numel) + " elements of " + dtype_name(dtype) + ")");
    return ok();
}

// An output may be the very same buffer as an input it replaces element by
// element (same address and size, hence the same shape), never a partial overlap.
Result<void> check_no_overlap(const LaunchArgsView& a, std::size_t oi, const char* orole,
                              const BufferArg& out, std::size_t ii, const char* irole,
                              const BufferArg& in, bool identical_ok) {
    if (out.absent() || in.absent() || out.size == 0 || in.size == 0) return ok();
    const bool overlap = out.addr < in.addr + in.size && in.addr < out.addr + out.size;
    if (!overlap) return ok();
    if (identical_ok && out.addr == in.addr && out.size == in.size) return ok();
    return a.invalid(arg_name(oi, orole) + " overlaps " + arg_name(ii, irole) +
                     (identical_ok ? " without being the same buffer" : ""));
}

// x, y and (a tensor) w must broadcast to exactly `space`.
Result<void> check_broadcast_space(const LaunchArgsView& a, const Shape& xs, const Shape& ys,
                                   const LerpWeight& w, const Shape& ws, std::size_t space_index,
                                   const char* space_role, const Shape& space) {
    std::array<NamedShape, 3> shapes{NamedShape{"x", xs}, NamedShape{"y", ys}, NamedShape{"w", ws}};
    Result<Shape> b = broadcast_shapes(std::span(shapes.data(), w.is_scalar ? 2 : 3));
    if (!b.ok()) return a.invalid(b.error().message());
    if (*b != space)
        return a.invalid(arg_name(space_index, space_role) + " " + shape_string(space) +
                         " is not the broadcast shape " + shape_string(*b) + " of x " +
                         shape_string(xs) + ", y " + shape_string(ys) +
                         (w.is_scalar ? std::string(" and a scalar w")
                                      : ", w " + shape_string(ws)));
    return ok();
}

Shape without_leading_ones(const Shape& s) {
    auto first = std::find_if(s.begin(), s.end(), [](std::int64_t d) { return d != 1; });
    return Shape(first, s.end());
}

Result<LerpGradPass> make_pass(const LaunchArgsView& a, GradOutput dx, GradOutput dy,
                               const Shape& dout_shape, const Shape& w_shape,
                               const Shape& target_shape) {
    LerpGradPass p;
    p.dx = dx;
    p.dy = dy;
    std::array<NamedShape, 3> ops{NamedShape{"dout", dout_shape}, NamedShape{"w", w_shape},
                                  NamedShape{"reduced gradient", target_shape}};
    Result<StridedLayout> l = make_layout({"dout", dout_shape}, std::span(ops.data(), p.reduces() ? 3 : 2));
    if (!l.ok()) return a.invalid(l.error().message());
    p.layout = *l;
    if (p.reduces()) p.reduction = split_reduction(p.layout, kGradTarget);
    return p;
}

}  // namespace

Result<LerpPlan> plan_lerp(const LaunchArgsView& a, std::span<const keel_dtype> implemented) {
    KEEL_TRY(a.expect_count(8));
    LerpPlan p;
    KEEL_TRY_ASSIGN(p.dtype, parse_dtype(a, implemented));
    KEEL_TRY_ASSIGN(p.x, parse_buffer(a, 0, "x", p.dtype));
    KEEL_TRY_ASSIGN(p.y, parse_buffer(a, 1, "y", p.dtype));
    KEEL_TRY_ASSIGN(p.w, parse_weight(a, 2, p.dtype));
    KEEL_TRY_ASSIGN(p.out, parse_buffer(a, 3, "out", p.dtype));
    KEEL_TRY_ASSIGN(const Shape xs, parse_shape(a, 4, "x_shape"));
    KEEL_TRY_ASSIGN(const Shape ys, parse_shape(a, 5, "y_shape"));
    KEEL_TRY_ASSIGN(const Shape ws, parse_shape(a, 6, "w_shape"));
    KEEL_TRY_ASSIGN(const Shape os, parse_shape(a, 7, "out_shape"));
    if (p.w.is_scalar && !ws.empty())
        return a.invalid(arg_name(6, "w_shape") + " must be empty when w is a scalar, got " +
                         shape_string(ws));
    KEEL_TRY(check_broadcast_space(a, xs, ys, p.w, ws, 7, "out_shape", os));
    KEEL_TRY(check_size(a, 0, "x", p.x, numel_of(xs), p.dtype, false));
    KEEL_TRY(check_size(a, 1, "y", p.y, numel_of(ys), p.dtype, false));
    if (!p.w.is_scalar) KEEL_TRY(check_size(a, 2, "w", p.w.buffer, numel_of(ws), p.dtype, false));
    KEEL_TRY(check_size(a, 3, "out", p.out, numel_of(os), p.dtype, false));
    KEEL_TRY(check_no_overlap(a, 3, "out", p.out, 0, "x", p.x, true));
    KEEL_TRY(check_no_overlap(a, 3, "out", p.out, 1, "y", p.y, true));
    if (!p.w.is_scalar) KEEL_TRY(check_no_overlap(a, 3, "out", p.out, 2, "w", p.w.buffer, true));

    std::array<NamedShape, 4> ops{NamedShape{"out", os}, NamedShape{"x", xs}, NamedShape{"y", ys},
                                  NamedShape{"w", ws}};
    Result<StridedLayout> l = make_layout({"out", os}, ops);
    if (!l.ok()) return a.invalid(l.error().message());
    p.layout = *l;
    return p;
}

Result<LerpGradPlan> plan_lerp_grad(const LaunchArgsView& a,
                                    std::span<const keel_dtype> implemented) {
    KEEL_TRY(a.expect_count(10));
    LerpGradPlan p;
    KEEL_TRY_ASSIGN(p.dtype, parse_dtype(a, implemented));
    KEEL_TRY_ASSIGN(const BufferArg x, parse_buffer(a, 0, "x", p.dtype));
    KEEL_TRY_ASSIGN(const BufferArg y, parse_buffer(a, 1, "y", p.dtype));
    KEEL_TRY_ASSIGN(p.w, parse_weight(a, 2, p.dtype));
    KEEL_TRY_ASSIGN(p.dout, parse_buffer(a, 3, "dout", p.dtype));
    KEEL_TRY_ASSIGN(p.dx, parse_buffer(a, 4, "dx", p.dtype));
    KEEL_TRY_ASSIGN(p.dy, parse_buffer(a, 5, "dy", p.dtype));
    KEEL_TRY_ASSIGN(const Shape xs, parse_shape(a, 6, "x_shape"));
    KEEL_TRY_ASSIGN(const Shape ys, parse_shape(a, 7, "y_shape"));
    KEEL_TRY_ASSIGN(const Shape ws, parse_shape(a, 8, "w_shape"));
    KEEL_TRY_ASSIGN(const Shape ds, parse_shape(a, 9, "dout_shape"));
    if (p.w.is_scalar && !ws.empty())
        return a.invalid(arg_name(8, "w_shape") + " must be empty when w is a scalar, got " +
                         shape_string(ws));
    KEEL_TRY(check_broadcast_space(a, xs, ys, p.w, ws, 9, "dout_shape", ds));
    const std::int64_t nx = numel_of(xs), ny = numel_of(ys);
    p.numel = numel_of(ds);
    // x and y are never read (only their shapes matter): they may be absent.
    KEEL_TRY(check_size(a, 0, "x", x, nx, p.dtype, true));
    KEEL_TRY(check_size(a, 1, "y", y, ny, p.dtype, true));
    if (!p.w.is_scalar) KEEL_TRY(check_size(a, 2, "w", p.w.buffer, numel_of(ws), p.dtype, false));
    KEEL_TRY(check_size(a, 3, "dout", p.dout, p.numel, p.dtype, false));
    KEEL_TRY(check_size(a, 4, "dx", p.dx, nx, p.dtype, true));
    KEEL_TRY(check_size(a, 5, "dy", p.dy, ny, p.dtype, true));
    KEEL_TRY(check_no_overlap(a, 5, "dy", p.dy, 4, "dx", p.dx, false));
    const auto check_reads = [&](std::size_t gi, const char* grole, const BufferArg& g) -> Result<void> {
        KEEL_TRY(check_no_overlap(a, gi, grole, g, 3, "dout", p.dout, true));
        if (!p.w.is_scalar) KEEL_TRY(check_no_overlap(a, gi, grole, g, 2, "w", p.w.buffer, true));
        return ok();
    };
    KEEL_TRY(check_reads(4, "dx", p.dx));
    KEEL_TRY(check_reads(5, "dy", p.dy));
    if (p.numel == 0) return p;  // nothing to iterate: present gradients are zero-filled

    const auto mode = [&](const BufferArg& g, std::int64_t n) {
        if (g.absent()) return GradOutput::absent;
        return n == p.numel ? GradOutput::elementwise : GradOutput::reduced;
    };
    const GradOutput gx = mode(p.dx, nx), gy = mode(p.dy, ny);
    const bool rx = gx == GradOutput::reduced, ry = gy == GradOutput::reduced;
    if (gx == GradOutput::absent && gy == GradOutput::absent) return p;
    if (rx && ry && without_leading_ones(xs) != without_leading_ones(ys)) {
        KEEL_TRY_ASSIGN(p.passes[0], make_pass(a, gx, GradOutput::absent, ds, ws, xs));
        KEEL_TRY_ASSIGN(p.passes[1], make_pass(a, GradOutput::absent, gy, ds, ws, ys));
        p.pass_count = 2;
        return p;
    }
    KEEL_TRY_ASSIGN(p.passes[0], make_pass(a, gx, gy, ds, ws, rx ? xs : ys));
    p.pass_count = 1;
    return p;
}

}  // namespace keel::plugin
