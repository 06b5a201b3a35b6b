// The operators of the tensor dialect and their attribute enums (activation, padding, dtype).
#ifndef TENSAT_TENSOR_OP_H
#define TENSAT_TENSOR_OP_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tensat {
inline namespace v0 {
namespace tensor {

/// Every operator of the dialect. Attributes (strides, axis, activation, shapes) are children
/// too, held by `num`, `ints` and `sym` leaves, so that rules can match on them; children are
/// ordered attributes first, then tensor operands (TENSAT's convention).
enum class Op : std::uint8_t {
  // Attribute leaves and lists.
  Num,   ///< an integer constant (payload)
  Sym,   ///< a name: input/weight names, dtypes (payload: symbol index)
  Ints,  ///< (ints d0 d1 ...): a list of integers (shapes, permutations)
  // Sources.
  Input,   ///< (input name dtype (ints dims...) [layout])
  Weight,  ///< (weight name dtype (ints dims...) [layout]): known before the run, so precomputable
  Scalar,  ///< (scalar v): a one-element f32 tensor [1] holding v, written in the term (`num` for
           ///< an integral value, else a `sym` of its shortest decimal text), so rules can read it
  // Elementwise.
  EwAdd,    ///< (ewadd a b), same shapes
  EwMul,    ///< (ewmul a b), same shapes
  SMul,     ///< (smul x s), s a one-element tensor
  Relu,     ///< (relu x)
  Tanh,     ///< (tanh x)
  Sigmoid,  ///< (sigmoid x)
  Gelu,     ///< (gelu x): the tanh approximation 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
  GeluErf,  ///< (gelu_erf x): the exact GELU x/2·(1 + erf(x/√2)) (PyTorch's default)
  Silu,     ///< (silu x): x·sigmoid(x) (Swish)
  HardSwish,  ///< (hard_swish x): x·clip(x/6 + 1/2, 0, 1) (ONNX HardSwish)
  Exp,        ///< (exp x)
  // Contractions and windows.
  MatMul,   ///< (matmul act a b): a [..., M, K] x b [..., K, N]; batched when rank > 2
  Conv2d,   ///< (conv2d stride_h stride_w pad act x w): NCHW, w [C_out, C_in/groups, kh, kw]
  PoolMax,  ///< (poolmax kh kw stride_h stride_w pad act x)
  PoolAvg,  ///< (poolavg kh kw stride_h stride_w pad act x)
  // Data movement.
  Concat,     ///< (concat axis x1 x2 ...): two or more inputs
  Split,      ///< (split axis size x): a pair, the first `size` entries along axis and the rest
  Split0,     ///< (split_0 pair): the first output of a split
  Split1,     ///< (split_1 pair): the second output of a split
  Transpose,  ///< (transpose (ints perm...) x): output dim i is input dim perm[i]
  Reshape,    ///< (reshape (ints dims...) x): same element count
  // Normalization and weight transforms.
  BatchNorm,  ///< (batchnorm x scale bias mean var): per channel (axis 1), inference mode
  Enlarge,    ///< (enlarge w ref): zero-pads kernel w to ref's kh x kw, centred
  Merge,      ///< (merge groups count w): grouped-conv weight for groups/count groups
  // Winograd convolution F(2x2, 3x3) (Lavin & Gray, CVPR 2016): a 3x3 stride-1 conv2d of one
  // group as 16 products over 4x4 input tiles, 2.25x fewer multiplies.
  WinoWeight,  ///< (wino_weight w): w [C_out, C_in, 3, 3] -> [16, C_out, C_in], G w G^T per filter
  WinoConv2d,  ///< (wino_conv2d pad act x u): conv2d 1 1 pad act x w, with u = (wino_weight w)
  Noop,        ///< (noop a b ...): joins several outputs into one root; costs nothing
  // Transformer extension.
  Softmax,     ///< (softmax axis x)
  LayerNorm,   ///< (layernorm x gamma beta [eps]): over the last axis; gamma, beta [last dim];
               ///< eps a one-element tensor (1e-5 when absent)
  Broadcast,   ///< (broadcast (ints dims...) x): numpy broadcasting to the given shape
  ReduceSum,   ///< (reduce_sum axis x): the axis is removed
  ReduceMax,   ///< (reduce_max axis x)
  ReduceMean,  ///< (reduce_mean axis x)
  Slice,       ///< (slice axis start end x): entries [start, end) along axis
  Pad,         ///< (pad axis before after x): zeros before and after along axis
  // ONNX extension (the operators ONNX import needs; no rewrite rule names them).
  EwSub,   ///< (ewsub a b), same shapes: a - b
  EwDiv,   ///< (ewdiv a b), same shapes: a / b
  EwPow,   ///< (ewpow a b), same shapes: a ^ b
  Sqrt,    ///< (sqrt x)
  Erf,     ///< (erf x): the Gauss error function (ONNX Erf; exact GELU is x/2 (1 + erf(x/sqrt 2)))
  Clip,    ///< (clip x lo hi): min(max(x, lo), hi); lo and hi one-element tensors
  Resize,  ///< (resize interp coord nearest (ints dims...) x): ONNX Resize to dims
  ConvTranspose,  ///< (conv_transpose sh sw pad_t pad_l pad_b pad_r groups x w): w [C_in,
                  ///< C_out/groups, kh, kw]
  Opaque,  ///< (opaque type dtype (ints dims...) x0 x1 ...): an ONNX operator the dialect does not
           ///< know
  // Physical layout.
  Relayout,  ///< (relayout layout x): the same tensor stored in `layout` (contiguous or
             ///< channels_last)
  // Fusion (cost model): a group of ops executed as one kernel.
  Arg,    ///< (arg i dtype (ints dims...) [layout]): the i-th input of a fused kernel's body
  Fused,  ///< (fused body x0 x1 ...): `body` (a term over `arg`s) computed as one kernel on x0, x1,
          ///< ...
};

inline constexpr std::size_t kNumOps = static_cast<std::size_t>(Op::Fused) + 1;

/// The epsilon of `batchnorm`, and of a `layernorm` without its own: part of their semantics, so
/// the executors, the importer (ONNX's other epsilons) and the exporter all read it here.
inline constexpr float kNormEps = 1e-5f;

/// What an operator computes, as the library's passes group operators (TVM's operator patterns,
/// MLIR's traits): each operator is in exactly one class.
enum class OpClass : std::uint8_t {
  Attribute,          ///< `num`, `sym`, `ints`: not tensors
  Source,             ///< `input`, `weight`, `scalar`: tensor leaves no node computes
  UnaryElementwise,   ///< one tensor, element by element (activations, exp, sqrt, erf)
  BinaryElementwise,  ///< two tensors of the same shape, element by element
  ScalarElementwise,  ///< one tensor element by element with one-element operands (smul, clip)
  Contraction,        ///< a library kernel (GEMM, convolution) writing its whole product
  Reduction,          ///< a reduction along one axis that removes it
  Other,              ///< windows, movement, normalizations, weight transforms, structure
};

/// Properties of an operator beyond its class (`OpInfo::traits`, bits).
enum OpTrait : std::uint8_t {
  /// Launches no kernel and moves no data: attributes, sources, `noop`, `arg`, the views
  /// `split`, `split_0`, `split_1`, `reshape` (of a contiguous tensor) and `broadcast` (a
  /// stride-0 view: its consumers read the small source tensor).
  kView = 1,
  /// Injective data movement (TVM's injective level): fuses into any consumer, as a root too.
  kInjective = 2,
  /// A fused body reads through it by index (the injective ops and `broadcast`).
  kGather = 4,
  /// A convolution post-op applied to each element alone (`conv_post_ops`).
  kPostActivation = 8,
};

/// One operator's record (MLIR's one-record operator definitions): its text name, its arity
/// (`min_children` = `max_children` for a fixed one), its class and traits. Fusion, layout
/// checks, both cost models and the executors' fused loops read these, never lists of their own.
struct OpInfo {
  std::string_view name;
  std::uint8_t min_children;
  std::uint8_t max_children;  ///< 255: any number
  OpClass cls = OpClass::Other;
  std::uint8_t traits = 0;  ///< `OpTrait` bits
};

inline constexpr std::uint8_t kVariadic = 255;

inline constexpr std::array<OpInfo, kNumOps> kOpInfo{{
    {"num", 0, 0, OpClass::Attribute, kView},
    {"sym", 0, 0, OpClass::Attribute, kView},
    {"ints", 0, kVariadic, OpClass::Attribute, kView},
    {"input", 3, 4, OpClass::Source, kView},
    {"weight", 3, 4, OpClass::Source, kView},
    {"scalar", 1, 1, OpClass::Source, kView},
    {"ewadd", 2, 2, OpClass::BinaryElementwise, 0},
    {"ewmul", 2, 2, OpClass::BinaryElementwise, 0},
    {"smul", 2, 2, OpClass::ScalarElementwise, 0},
    {"relu", 1, 1, OpClass::UnaryElementwise, kPostActivation},
    {"tanh", 1, 1, OpClass::UnaryElementwise, kPostActivation},
    {"sigmoid", 1, 1, OpClass::UnaryElementwise, kPostActivation},
    {"gelu", 1, 1, OpClass::UnaryElementwise, 0},
    {"gelu_erf", 1, 1, OpClass::UnaryElementwise, kPostActivation},
    {"silu", 1, 1, OpClass::UnaryElementwise, kPostActivation},
    {"hard_swish", 1, 1, OpClass::UnaryElementwise, kPostActivation},
    {"exp", 1, 1, OpClass::UnaryElementwise, 0},
    {"matmul", 3, 3, OpClass::Contraction, 0},
    {"conv2d", 6, 6, OpClass::Contraction, 0},
    {"poolmax", 7, 7, OpClass::Other, 0},
    {"poolavg", 7, 7, OpClass::Other, 0},
    {"concat", 3, kVariadic, OpClass::Other, kInjective | kGather},
    {"split", 3, 3, OpClass::Other, kView},
    {"split_0", 1, 1, OpClass::Other, kView},
    {"split_1", 1, 1, OpClass::Other, kView},
    {"transpose", 2, 2, OpClass::Other, kInjective | kGather},
    {"reshape", 2, 2, OpClass::Other, kView},
    {"batchnorm", 5, 5, OpClass::Other, 0},
    {"enlarge", 2, 2, OpClass::Other, 0},
    {"merge", 3, 3, OpClass::Other, 0},
    {"wino_weight", 1, 1, OpClass::Other, 0},
    {"wino_conv2d", 4, 4, OpClass::Other, 0},
    {"noop", 2, kVariadic, OpClass::Other, kView},
    {"softmax", 2, 2, OpClass::Other, 0},
    {"layernorm", 3, 4, OpClass::Other, 0},
    {"broadcast", 2, 2, OpClass::Other, kView | kGather},
    {"reduce_sum", 2, 2, OpClass::Reduction, 0},
    {"reduce_max", 2, 2, OpClass::Reduction, 0},
    {"reduce_mean", 2, 2, OpClass::Reduction, 0},
    {"slice", 4, 4, OpClass::Other, kInjective | kGather},
    {"pad", 4, 4, OpClass::Other, kInjective | kGather},
    {"ewsub", 2, 2, OpClass::BinaryElementwise, 0},
    {"ewdiv", 2, 2, OpClass::BinaryElementwise, 0},
    {"ewpow", 2, 2, OpClass::BinaryElementwise, 0},
    {"sqrt", 1, 1, OpClass::UnaryElementwise, 0},
    {"erf", 1, 1, OpClass::UnaryElementwise, 0},
    {"clip", 3, 3, OpClass::ScalarElementwise, 0},
    {"resize", 5, 5, OpClass::Other, 0},
    {"conv_transpose", 9, 9, OpClass::Other, 0},
    {"opaque", 3, kVariadic, OpClass::Other, 0},
    {"relayout", 2, 2, OpClass::Other, 0},
    {"arg", 3, 4, OpClass::Other, kView},
    {"fused", 2, kVariadic, OpClass::Other, 0},
}};

[[nodiscard]] constexpr const OpInfo& op_info(Op op) noexcept {
  return kOpInfo[static_cast<std::size_t>(op)];
}
[[nodiscard]] constexpr std::string_view op_name(Op op) noexcept { return op_info(op).name; }

/// The operator named `name` (`num` and `sym` are never named: they are written as atoms).
[[nodiscard]] inline std::optional<Op> op_from_name(std::string_view name) noexcept {
  for (std::size_t i = static_cast<std::size_t>(Op::Ints); i < kNumOps; ++i)
    if (kOpInfo[i].name == name) return static_cast<Op>(i);
  return std::nullopt;
}

/// Fused activation of matmul, conv2d and pooling (TASO's `ActiMode` numbering).
enum class Activation : std::uint8_t { None = 0, Sigmoid = 1, Relu = 2, Tanh = 3 };
/// The `Activation` a node's activation operand holds (shape inference has checked it is one:
/// any other value reads as None).
[[nodiscard]] constexpr Activation activation_of(std::int64_t value) noexcept {
  return value >= 1 && value <= 3 ? static_cast<Activation>(value) : Activation::None;
}
/// Padding of conv2d and pooling (TASO's `PaddingMode` numbering).
enum class Padding : std::uint8_t { Same = 0, Valid = 1 };
/// Interpolation of `resize` (ONNX Resize's `mode`).
enum class ResizeInterp : std::uint8_t { Nearest = 0, Linear = 1 };
/// How `resize` maps an output coordinate to an input one (ONNX's `coordinate_transformation_mode`,
/// scale = output extent / input extent): half_pixel (x + 0.5) / scale - 0.5, asymmetric
/// x / scale, align_corners x (in - 1) / (out - 1) (0 when out is 1).
enum class ResizeCoord : std::uint8_t { HalfPixel = 0, Asymmetric = 1, AlignCorners = 2 };
/// How nearest `resize` rounds an input coordinate (ONNX's `nearest_mode`); linear ignores it.
enum class ResizeNearest : std::uint8_t {
  RoundPreferFloor = 0,
  Floor = 1,
  RoundPreferCeil = 2,
  Ceil = 3
};
/// Element type. f16 and bf16 are stored as such and computed in f32 by the reference executor.
enum class DType : std::uint8_t { F32 = 0, F16 = 1, BF16 = 2 };

[[nodiscard]] constexpr std::string_view dtype_name(DType t) noexcept {
  return t == DType::F32 ? "f32" : t == DType::F16 ? "f16" : "bf16";
}
[[nodiscard]] inline std::optional<DType> dtype_from_name(std::string_view name) noexcept {
  if (name == "f32") return DType::F32;
  if (name == "f16") return DType::F16;
  if (name == "bf16") return DType::BF16;
  return std::nullopt;
}
/// How a tensor is stored (its physical layout), independent of its logical shape, which every
/// operator's semantics is written in. `Contiguous`: row-major in the logical order.
/// `ChannelsLast`: a rank-4 tensor of logical shape [N, C, H, W] stored as N, H, W, C (PyTorch's
/// `channels_last` memory format, XLA's minor-to-major {1, 3, 2, 0}), what tensor-core and
/// oneDNN convolutions read natively.
enum class Layout : std::uint8_t { Contiguous = 0, ChannelsLast = 1 };

[[nodiscard]] constexpr std::string_view layout_name(Layout l) noexcept {
  return l == Layout::Contiguous ? "contiguous" : "channels_last";
}
[[nodiscard]] inline std::optional<Layout> layout_from_name(std::string_view name) noexcept {
  if (name == "contiguous") return Layout::Contiguous;
  if (name == "channels_last") return Layout::ChannelsLast;
  return std::nullopt;
}

/// Bytes per element.
[[nodiscard]] constexpr std::size_t dtype_bytes(DType t) noexcept {
  return t == DType::F32 ? 4 : 2;
}

// Operator classes, read from the records: a new operator states its class and traits in its
// `kOpInfo` entry, and layout checks, fusion and the executors' fused loops follow.

[[nodiscard]] constexpr OpClass op_class(Op op) noexcept { return op_info(op).cls; }
[[nodiscard]] constexpr bool has_trait(Op op, OpTrait trait) noexcept {
  return (op_info(op).traits & trait) != 0;
}
/// True for ops applied element by element to one tensor (activations, exp, sqrt and erf).
[[nodiscard]] constexpr bool is_unary_elementwise(Op op) noexcept {
  return op_class(op) == OpClass::UnaryElementwise;
}
/// True for ops combining two tensors of the same shape element by element.
[[nodiscard]] constexpr bool is_binary_elementwise(Op op) noexcept {
  return op_class(op) == OpClass::BinaryElementwise;
}
/// True for every op whose output element depends only on the same element of its tensor
/// operand(s): the unary and binary ones, and `smul` and `clip`, whose scalar operands (one
/// element each) are read at position 0.
[[nodiscard]] constexpr bool is_elementwise(Op op) noexcept {
  return is_unary_elementwise(op) || is_binary_elementwise(op) ||
         op_class(op) == OpClass::ScalarElementwise;
}
/// True for the contractions (`matmul`, `conv2d`): library kernels (GEMM, convolution) that read
/// their operands from memory and write their whole product; fusion allows one per kernel, the
/// cost model stages its operands and, on one CPU thread, its product.
[[nodiscard]] constexpr bool is_contraction(Op op) noexcept {
  return op_class(op) == OpClass::Contraction;
}
/// True for the tensor leaves, which no node computes: `input`, `weight` and `scalar`.
[[nodiscard]] constexpr bool is_source(Op op) noexcept { return op_class(op) == OpClass::Source; }
/// True for ops that launch no kernel and move no data (`kView`).
[[nodiscard]] constexpr bool is_view_op(Op op) noexcept { return has_trait(op, kView); }
/// True for the attribute leaves and lists (`num`, `sym`, `ints`): not tensors.
[[nodiscard]] constexpr bool is_attribute(Op op) noexcept {
  return op_class(op) == OpClass::Attribute;
}
/// True for the operators a program computes: neither attributes, nor sources, nor the
/// `noop` that gathers a program's outputs (what `op_histogram` counts).
[[nodiscard]] constexpr bool is_operator(Op op) noexcept {
  return !is_attribute(op) && !is_source(op) && op != Op::Noop;
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_TENSOR_OP_H
