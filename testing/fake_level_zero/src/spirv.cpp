#include "spirv.hpp"

#include <cstring>
#include <functional>
#include <optional>

namespace fake_ze {

namespace {

// Opcodes and enumerants of the SPIR-V specification.
constexpr std::uint32_t kMagic = 0x07230203;
constexpr std::uint32_t kOpEntryPoint = 15;
constexpr std::uint32_t kOpTypeInt = 21;
constexpr std::uint32_t kOpTypeFloat = 22;
constexpr std::uint32_t kOpTypeVector = 23;
constexpr std::uint32_t kOpTypeArray = 28;
constexpr std::uint32_t kOpTypeStruct = 30;
constexpr std::uint32_t kOpTypePointer = 32;
constexpr std::uint32_t kOpConstant = 43;
constexpr std::uint32_t kOpFunction = 54;
constexpr std::uint32_t kOpFunctionParameter = 55;
constexpr std::uint32_t kOpDecorate = 71;
constexpr std::uint32_t kExecutionModelKernel = 6;
constexpr std::uint32_t kDecorationFuncParamAttr = 38;
constexpr std::uint32_t kFuncParamAttrByVal = 2;

struct Type {
    std::uint32_t opcode = 0;
    std::vector<std::uint32_t> operands;  // the instruction's words after the result id
};

struct Layout {
    std::uint64_t size;
    std::uint64_t align;
};

}  // namespace

SpirvKernels read_spirv(const std::uint8_t* bytes, std::size_t size) {
    SpirvKernels out;
    if (bytes == nullptr || size < 20 || size % 4 != 0) {
        out.error = "not SPIR-V: " + std::to_string(size) + " bytes";
        return out;
    }
    std::vector<std::uint32_t> words(size / 4);
    std::memcpy(words.data(), bytes, size);
    if (words[0] != kMagic) {
        out.error = "not SPIR-V: bad magic number";
        return out;
    }
    std::map<std::uint32_t, std::string> entry_points;  // function id -> name
    std::map<std::uint32_t, Type> types;
    std::map<std::uint32_t, std::uint64_t> constants;
    std::map<std::uint32_t, bool> by_value;  // parameter id -> ByVal
    std::map<std::uint32_t, std::vector<std::uint32_t>> parameters;  // function id -> parameter type ids
    std::map<std::uint32_t, std::vector<std::uint32_t>> parameter_result_ids;
    std::uint32_t current_function = 0;
    for (std::size_t at = 5; at < words.size();) {
        const std::uint32_t count = words[at] >> 16, opcode = words[at] & 0xffff;
        if (count == 0 || at + count > words.size()) {
            out.error = "truncated instruction";
            return out;
        }
        const std::uint32_t* w = &words[at];
        switch (opcode) {
            case kOpEntryPoint:
                if (count >= 4 && w[1] == kExecutionModelKernel)
                    entry_points[w[2]] = std::string(reinterpret_cast<const char*>(&w[3]),
                                                     strnlen(reinterpret_cast<const char*>(&w[3]), (count - 3) * 4));
                break;
            case kOpTypeInt: case kOpTypeFloat: case kOpTypeVector: case kOpTypeArray:
            case kOpTypeStruct: case kOpTypePointer:
                types[w[1]] = Type{opcode, std::vector<std::uint32_t>(w + 2, w + count)};
                break;
            case kOpConstant:
                if (count >= 4) constants[w[2]] = count >= 5 ? (std::uint64_t{w[4]} << 32 | w[3]) : w[3];
                break;
            case kOpDecorate:
                if (count >= 4 && w[2] == kDecorationFuncParamAttr && w[3] == kFuncParamAttrByVal) by_value[w[1]] = true;
                break;
            case kOpFunction:
                current_function = w[2];
                parameters[current_function];
                break;
            case kOpFunctionParameter:
                parameters[current_function].push_back(w[1]);
                parameter_result_ids[current_function].push_back(w[2]);
                break;
            default:
                break;
        }
        at += count;
    }
    // C layout of a type, as OpenCL lays out kernel arguments.
    std::function<std::optional<Layout>(std::uint32_t)> layout = [&](std::uint32_t id) -> std::optional<Layout> {
        auto it = types.find(id);
        if (it == types.end()) return std::nullopt;
        const Type& t = it->second;
        switch (t.opcode) {
            case kOpTypeInt:
            case kOpTypeFloat:
                return Layout{t.operands[0] / 8, t.operands[0] / 8};
            case kOpTypePointer:
                return Layout{8, 8};
            case kOpTypeVector: {
                auto e = layout(t.operands[0]);
                if (!e) return std::nullopt;
                const std::uint64_t n = t.operands[1] == 3 ? 4 : t.operands[1];
                return Layout{e->size * n, e->size * n};
            }
            case kOpTypeArray: {
                auto e = layout(t.operands[0]);
                auto n = constants.find(t.operands[1]);
                if (!e || n == constants.end()) return std::nullopt;
                return Layout{e->size * n->second, e->align};
            }
            case kOpTypeStruct: {
                std::uint64_t offset = 0, align = 1;
                for (std::uint32_t member : t.operands) {
                    auto m = layout(member);
                    if (!m) return std::nullopt;
                    offset = (offset + m->align - 1) / m->align * m->align + m->size;
                    align = std::max(align, m->align);
                }
                return Layout{(offset + align - 1) / align * align, align};
            }
            default:
                return std::nullopt;
        }
    };
    for (const auto& [function, name] : entry_points) {
        std::vector<std::uint32_t> sizes;
        const auto& type_ids = parameters[function];
        const auto& result_ids = parameter_result_ids[function];
        for (std::size_t i = 0; i < type_ids.size(); ++i) {
            std::uint32_t type = type_ids[i];
            // A by-value struct is a pointer to it in SPIR-V; its size is the struct's.
            if (by_value.count(result_ids[i]) && types.count(type) && types[type].opcode == kOpTypePointer)
                type = types[type].operands[1];
            else if (types.count(type) && types[type].opcode == kOpTypePointer) {
                sizes.push_back(8);
                continue;
            }
            const auto l = layout(type);
            if (!l) {
                out.error = "kernel " + name + ": parameter " + std::to_string(i) + " has a type this reader does not know";
                return out;
            }
            sizes.push_back(static_cast<std::uint32_t>(l->size));
        }
        out.kernels[name] = std::move(sizes);
    }
    return out;
}

}  // namespace fake_ze
