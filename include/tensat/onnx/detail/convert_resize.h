// The ONNX importer's converters of Resize and Upsample.
#ifndef TENSAT_ONNX_DETAIL_CONVERT_RESIZE_H
#define TENSAT_ONNX_DETAIL_CONVERT_RESIZE_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tensat/onnx/detail/importer.h"

namespace tensat {
inline namespace v0 {
namespace onnx {
namespace detail {

inline void Importer::resize(const NodeContext& c, bool upsample) {
  const Tensor x = c.tensor(0);
  const Dims in = g_.shape(x);
  std::string mode = c.string_attr("mode", "nearest");
  // Inputs: Upsample-9 and Resize-10 (X, scales); Resize-11+ (X, roi, scales, sizes).
  const bool legacy = upsample || opset_ < 11;
  std::optional<std::vector<double>> scales;
  std::optional<Dims> sizes;
  if (upsample && opset_ < 9) {
    scales = c.floats_attr("scales");
  } else if (legacy) {
    scales = c.constant_input(1);
  } else {
    if (c.has_input(2) && !c.in(2).data.empty()) scales = c.constant_input(2);
    if (c.has_input(3)) sizes = c.ints_input(3);
  }
  Dims out = in;
  if (sizes) {
    if (sizes->size() != in.size()) c.fail("sizes must have one value per axis");
    out = *sizes;
  } else {
    if (!scales || scales->size() != in.size()) c.fail("scales must have one value per axis");
    for (std::size_t a = 0; a < in.size(); ++a) {
      const double target = static_cast<double>(in[a]) * (*scales)[a];
      if (!(target >= 1 && target < static_cast<double>(max_tensor_)))
        c.fail("a scale out of range");
      // With scales, ONNX maps coordinates by the given scale; it equals out / in (which the
      // dialect uses) only when in · scale is a whole number.
      if (std::floor(target) != target)
        c.unsupported_checked("a scale whose output extent is not a whole number");
      out[a] = static_cast<std::int64_t>(target);
    }
  }
  for (std::int64_t d : out)
    if (d <= 0) c.fail("a non-positive output size");
  checked_elements(out, max_tensor_, c.where, "the result");
  tensor::ResizeInterp interp = tensor::ResizeInterp::Nearest;
  if (mode == "linear" || mode == "bilinear")
    interp = tensor::ResizeInterp::Linear;
  else if (mode != "nearest")
    c.unsupported_checked(fmt::format("mode '{}' is not supported", mode));
  tensor::ResizeCoord coord = tensor::ResizeCoord::Asymmetric;
  tensor::ResizeNearest nearest = tensor::ResizeNearest::RoundPreferFloor;
  if (legacy) {
    // Upsample and Resize-10: asymmetric coordinates; nearest rounds down when enlarging, up
    // when shrinking (onnxruntime's reading of the old specs).
    bool grows = false, shrinks = false;
    for (std::size_t a = 0; a < in.size(); ++a) {
      grows = grows || out[a] > in[a];
      shrinks = shrinks || out[a] < in[a];
    }
    if (grows && shrinks && interp == tensor::ResizeInterp::Nearest)
      c.unsupported_checked(
          "nearest resizing that enlarges some axes and shrinks others (opset < 11)");
    nearest = shrinks ? tensor::ResizeNearest::Ceil : tensor::ResizeNearest::Floor;
  } else {
    const std::string transform = c.string_attr("coordinate_transformation_mode", "half_pixel");
    if (transform == "half_pixel")
      coord = tensor::ResizeCoord::HalfPixel;
    else if (transform == "asymmetric")
      coord = tensor::ResizeCoord::Asymmetric;
    else if (transform == "align_corners")
      coord = tensor::ResizeCoord::AlignCorners;
    else if (transform == "pytorch_half_pixel") {
      // half_pixel, except that an output extent of 1 reads coordinate 0.
      for (std::size_t a = 0; a < in.size(); ++a)
        if (out[a] == 1 && in[a] != 1)
          c.unsupported_checked("pytorch_half_pixel to an extent of 1");
      coord = tensor::ResizeCoord::HalfPixel;
    } else {
      c.unsupported_checked(
          fmt::format("coordinate_transformation_mode '{}' is not supported", transform));
    }
    const std::string rounding = c.string_attr("nearest_mode", "round_prefer_floor");
    if (rounding == "round_prefer_floor")
      nearest = tensor::ResizeNearest::RoundPreferFloor;
    else if (rounding == "floor")
      nearest = tensor::ResizeNearest::Floor;
    else if (rounding == "round_prefer_ceil")
      nearest = tensor::ResizeNearest::RoundPreferCeil;
    else if (rounding == "ceil")
      nearest = tensor::ResizeNearest::Ceil;
    else
      c.fail(fmt::format("nearest_mode '{}' is not one of ONNX's", rounding));
    if (c.int_attr("exclude_outside", 0) != 0)
      c.unsupported_checked("exclude_outside is not supported");
  }
  if (interp == tensor::ResizeInterp::Linear)
    nearest = tensor::ResizeNearest::RoundPreferFloor;  // unused: canonical
  set_tensor(c, out == in ? x : g_.resize(x, out, interp, coord, nearest));
}

}  // namespace detail
}  // namespace onnx
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_ONNX_DETAIL_CONVERT_RESIZE_H
