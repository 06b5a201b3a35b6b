// Evaluator: runs a program node by node, freeing each tensor after its last reader, a `fused`
// node as a FusedLoop (or op by op).
#ifndef TENSAT_EXEC_DETAIL_EVALUATOR_H
#define TENSAT_EXEC_DETAIL_EVALUATOR_H

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tensat/exec/detail/fused_loop.h"
#include "tensat/tensor/graph.h"

namespace tensat {
inline namespace v0 {
namespace tensor {
namespace detail {

/// Evaluates programs node by node.
class Evaluator {
 public:
  /// Called after each evaluated node with its index and the seconds its evaluation took.
  using NodeTimer = std::function<void(std::size_t node, double seconds)>;

  Evaluator(const RecExpr<TensorNode>& program, const Bindings& bindings, bool fused_loops = true,
            NodeTimer on_node = nullptr)
      : p_(program),
        bindings_(bindings),
        infos_(check_program(program)),
        values_(program.size()),
        fused_loops_(fused_loops),
        on_node_(std::move(on_node)) {}

  /// Evaluates every non-symbolic node (only the weight-only ones when `weight_only`); frees
  /// tensors after their last use unless `keep`.
  void run(bool keep, bool weight_only = false) {
    const std::size_t n = p_.size();
    std::vector<std::size_t> last_use(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      last_use[i] = std::max(last_use[i], i);
      for (Id c : p_[Id(i)].children())
        last_use[c.index()] = infos_[i].symbolic ? n : std::max(last_use[c.index()], i);
    }
    last_use[n - 1] = n;
    for (std::size_t i = 0; i < n; ++i) {
      if (infos_[i].symbolic || (weight_only && !infos_[i].weight_only)) continue;
      if (on_node_) {
        const auto start = std::chrono::steady_clock::now();
        values_[i] = eval(i, nullptr);
        on_node_(i,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      } else {
        values_[i] = eval(i, nullptr);
      }
      if (!keep)
        for (Id c : p_[Id(i)].children())
          if (last_use[c.index()] == i) {
            values_[c.index()].t.reset();
            values_[c.index()].t2.reset();
          }
    }
  }

  [[nodiscard]] std::vector<HostTensor> outputs() const {
    std::vector<HostTensor> out;
    const Value& root = values_.back();
    if (p_[Id(p_.size() - 1)].op() == Op::Noop) {
      for (const auto& t : root.outs) out.push_back(*t);
    } else {
      out.push_back(*root.t);
    }
    return out;
  }
  [[nodiscard]] const std::vector<TensorInfo>& infos() const noexcept { return infos_; }
  [[nodiscard]] const Value& value(std::size_t i) const { return values_[i]; }

 private:
  /// `args`: the fused kernel's inputs when evaluating a body term (symbolic nodes), else null.
  Value eval(std::size_t i, const std::vector<std::shared_ptr<const HostTensor>>* args) {
    const TensorNode& node = p_[Id(i)];
    const auto ch = node.children();
    const TensorInfo& info = infos_[i];
    auto val = [&](std::size_t k) -> const Value& { return values_[ch[k].index()]; };
    auto num = [&](std::size_t k) { return val(k).value; };
    auto ten = [&](std::size_t k) -> const HostTensor& {
      const Value& v = val(k);
      if (!v.t)
        throw ExecutionError(fmt::format("execute: node {} ({}) reads a freed or missing tensor", i,
                                         node.op_name()));
      return *v.t;
    };
    Value out;
    auto tensor_result = [&](HostTensor t) {
      t.dtype = info.dtype;
      round_tensor(t);
      out.t = std::make_shared<const HostTensor>(std::move(t));
      return out;
    };
    switch (node.op()) {
      case Op::Num:
        out.value = node.value();
        return out;
      case Op::Sym:
        out.name = std::string(node.symbol().str());
        return out;
      case Op::Ints:
        for (std::size_t k = 0; k < ch.size(); ++k) out.ints.push_back(num(k));
        return out;
      case Op::Input:
      case Op::Weight: {
        const Value& nv = val(0);
        const std::string name = p_[ch[0]].op() == Op::Num ? std::to_string(nv.value) : nv.name;
        auto it = bindings_.find(name);
        if (it == bindings_.end()) throw MissingBindingError(name);
        if (it->second.dims != info.dims) throw BindingShapeError(name, info.dims, it->second.dims);
        if (static_cast<std::int64_t>(it->second.data.size()) != info.elements())
          throw ExecutionError(fmt::format("execute: '{}' holds {} values for shape {}", name,
                                           it->second.data.size(), dims_to_string(info.dims)));
        if (it->second.dtype == DType::F32 && info.dtype == DType::F32) {
          // Read in place (the bindings outlive the run): no copy of the model's weights per run.
          out.t = std::shared_ptr<const HostTensor>(&it->second, [](const HostTensor*) {});
          return out;
        }
        return tensor_result(it->second);
      }
      case Op::Scalar: {
        HostTensor t(Dims{1});
        t.data[0] = TensorNode::scalar_of_atom(p_[ch[0]]).value_or(0.0f);
        return tensor_result(std::move(t));
      }
      case Op::Arg: {
        const auto k = static_cast<std::size_t>(num(0));
        if (!args || k >= args->size())
          throw ExecutionError(fmt::format("execute: arg {} outside a fused kernel", k));
        return tensor_result(*(*args)[k]);
      }
      case Op::EwAdd:
      case Op::EwMul:
      case Op::EwSub:
      case Op::EwDiv:
      case Op::EwPow: {
        HostTensor r = ten(0);
        ArrayMap a(r.data.data(), r.elements());
        ConstArrayMap b(ten(1).data.data(), r.elements());
        switch (node.op()) {
          case Op::EwAdd:
            a += b;
            break;
          case Op::EwMul:
            a *= b;
            break;
          case Op::EwSub:
            a -= b;
            break;
          case Op::EwDiv:
            a /= b;
            break;
          default:
            pow_inplace(r.data.data(), ten(1).data.data(), r.elements());
            break;
        }
        return tensor_result(std::move(r));
      }
      case Op::SMul: {
        HostTensor r = ten(0);
        ArrayMap(r.data.data(), r.elements()) *= ten(1).data[0];
        return tensor_result(std::move(r));
      }
      case Op::Relu:
      case Op::Tanh:
      case Op::Sigmoid:
      case Op::Gelu:
      case Op::GeluErf:
      case Op::Silu:
      case Op::HardSwish:
      case Op::Exp:
      case Op::Sqrt:
      case Op::Erf: {
        HostTensor r = ten(0);
        ArrayMap a(r.data.data(), r.elements());
        if (node.op() == Op::Relu)
          activate(r.data.data(), r.elements(), Activation::Relu);
        else if (node.op() == Op::Tanh)
          activate(r.data.data(), r.elements(), Activation::Tanh);
        else if (node.op() == Op::Sigmoid)
          activate(r.data.data(), r.elements(), Activation::Sigmoid);
        else if (node.op() == Op::Gelu)
          gelu(r.data.data(), r.elements());
        else if (node.op() == Op::GeluErf)
          gelu_erf(r.data.data(), r.data.data(), r.elements());
        else if (node.op() == Op::Silu)
          silu(r.data.data(), r.data.data(), r.elements());
        else if (node.op() == Op::HardSwish)
          hard_swish(r.data.data(), r.data.data(), r.elements());
        else if (node.op() == Op::Sqrt)
          sqrt_inplace(r.data.data(), r.elements());
        else if (node.op() == Op::Erf)
          erf_inplace(r.data.data(), r.elements());
        else
          a = a.exp();
        return tensor_result(std::move(r));
      }
      case Op::MatMul:
        return tensor_result(matmul(ten(1), ten(2), activation_of(num(0))));
      case Op::Conv2d:
        return tensor_result(conv2d(ten(4), ten(5), num(0), num(1), num(2), activation_of(num(3))));
      case Op::PoolMax:
      case Op::PoolAvg:
        return tensor_result(pool(ten(6), node.op() == Op::PoolMax, num(0), num(1), num(2), num(3),
                                  num(4), activation_of(num(5))));
      case Op::Concat: {
        std::vector<const HostTensor*> xs;
        for (std::size_t k = 1; k < ch.size(); ++k) xs.push_back(&ten(k));
        return tensor_result(concat(num(0), xs));
      }
      case Op::Split: {
        const HostTensor& x = ten(2);
        const std::int64_t axis = num(0), size = num(1);
        out.t = std::make_shared<const HostTensor>(slice(x, axis, 0, size));
        out.t2 = std::make_shared<const HostTensor>(
            slice(x, axis, size, x.dims[static_cast<std::size_t>(axis)]));
        return out;
      }
      case Op::Split0:
      case Op::Split1: {
        const Value& pair = val(0);
        const auto& src = node.op() == Op::Split0 ? pair.t : pair.t2;
        if (!src) throw ExecutionError(fmt::format("execute: node {} reads a freed split", i));
        out.t = src;
        return out;
      }
      case Op::Transpose:
        return tensor_result(transpose(ten(1), val(0).ints));
      case Op::Reshape: {
        HostTensor r = ten(1);
        r.dims = val(0).ints;
        return tensor_result(std::move(r));
      }
      case Op::BatchNorm:
        return tensor_result(batchnorm(ten(0), ten(1), ten(2), ten(3), ten(4)));
      case Op::Enlarge:
        return tensor_result(enlarge(ten(0), ten(1).dims));
      case Op::Merge:
        return tensor_result(merge(ten(2), num(0), num(1)));
      case Op::WinoWeight:
        return tensor_result(wino_weight(ten(0)));
      case Op::WinoConv2d:
        return tensor_result(wino_conv2d(ten(2), ten(3), num(0), activation_of(num(1))));
      case Op::Noop:
        for (std::size_t k = 0; k < ch.size(); ++k) {
          const Value& v = val(k);
          if (v.t)
            out.outs.push_back(v.t);
          else
            out.outs.insert(out.outs.end(), v.outs.begin(), v.outs.end());
        }
        return out;
      case Op::Softmax:
        return tensor_result(softmax(ten(1), num(0)));
      case Op::LayerNorm:
        return tensor_result(
            layernorm(ten(0), ten(1), ten(2), ch.size() == 4 ? ten(3).data.at(0) : kNormEps));
      case Op::Broadcast:
        return tensor_result(broadcast(ten(1), val(0).ints));
      case Op::ReduceSum:
      case Op::ReduceMax:
      case Op::ReduceMean:
        return tensor_result(reduce(ten(1), num(0), node.op()));
      case Op::Slice:
        return tensor_result(slice(ten(3), num(0), num(1), num(2)));
      case Op::Pad:
        return tensor_result(pad_axis(ten(3), num(0), num(1), num(2)));
      case Op::Clip: {
        HostTensor r = ten(0);
        clip(r.data.data(), r.elements(), ten(1).data[0], ten(2).data[0]);
        return tensor_result(std::move(r));
      }
      case Op::Resize:
        return tensor_result(resize(ten(4), val(3).ints, num(0), num(1), num(2)));
      case Op::ConvTranspose:
        return tensor_result(
            conv_transpose(ten(7), ten(8), num(0), num(1), num(2), num(3), num(4), num(5), num(6)));
      case Op::Opaque:
        throw OpaqueOpError(i, val(0).name);
      // Host tensors are kept in their logical order whatever the layout they are said to be
      // stored in: a layout changes what a kernel costs, never what it computes.
      case Op::Relayout:
        out.t = val(1).t;
        return out;
      case Op::Fused: {
        std::vector<std::shared_ptr<const HostTensor>> inputs;
        for (std::size_t k = 1; k < ch.size(); ++k) {
          if (!val(k).t)
            throw ExecutionError(fmt::format("execute: fused node {} reads a freed tensor", i));
          inputs.push_back(val(k).t);
        }
        if (fused_loops_)
          if (std::optional<HostTensor> r = eval_loop(ch[0].index(), inputs))
            return tensor_result(std::move(*r));
        return tensor_result(*eval_body(ch[0].index(), inputs));
      }
    }
    throw ExecutionError(fmt::format("execute: unknown operator at node {}", i));
  }

  /// The body's nodes (symbolic nodes reachable from `body` through symbolic children), in
  /// program order: found from the body's root, in time proportional to the body's size.
  std::vector<std::size_t> body_order(std::size_t body) {
    if (stamp_.size() != p_.size()) stamp_.assign(p_.size(), 0);
    ++generation_;
    std::vector<std::size_t> order{body};
    stamp_[body] = generation_;
    for (std::size_t k = 0; k < order.size(); ++k)
      for (Id c : p_[Id(order[k])].children())
        if (infos_[c.index()].symbolic && stamp_[c.index()] != generation_) {
          stamp_[c.index()] = generation_;
          order.push_back(c.index());
        }
    std::sort(order.begin(), order.end());
    return order;
  }

  /// The kernel's value computed by one `FusedLoop`, or nothing when a body term has no loop form
  /// (pooling, normalizations, softmax, a reduction below the root, rank above 16): then
  /// `eval_body` evaluates it op by op.
  std::optional<HostTensor> eval_loop(
      std::size_t body, const std::vector<std::shared_ptr<const HostTensor>>& inputs) {
    constexpr std::size_t kNone = static_cast<std::size_t>(-1);
    const std::vector<std::size_t> order = body_order(body);
    if (term_of_.size() != p_.size()) term_of_.assign(p_.size(), kNone);
    std::vector<std::size_t>& term_of = term_of_;  // entries of body nodes only, reset below
    struct Reset {
      std::vector<std::size_t>& term_of;
      const std::vector<std::size_t>& order;
      ~Reset() {
        for (std::size_t j : order) term_of[j] = kNone;
      }
    } reset{term_of, order};
    FusedLoop loop(fused_scratch_);
    loop.reserve(2 * order.size());  // the body's terms and, at most, a leaf for each
    for (std::size_t j : order) {
      const TensorNode& node = p_[Id(j)];
      const auto ch = node.children();
      if (infos_[j].dims.size() > 16) return std::nullopt;
      auto attr = [&](std::size_t k) { return values_[ch[k].index()].value; };
      // The term of tensor child k: a body term, or a leaf for a tensor computed outside the body.
      auto operand = [&](std::size_t k) -> std::size_t {
        const std::size_t c = ch[k].index();
        if (infos_[c].symbolic) return term_of[c];
        if (!values_[c].t)
          throw ExecutionError(fmt::format("execute: fused body node {} reads a freed tensor", j));
        if (infos_[c].dims.size() > 16) return kNone;
        FusedLoop::Term leaf;
        leaf.dtype = infos_[c].dtype;
        leaf.dims = infos_[c].dims;
        leaf.leaf = values_[c].t;
        return loop.add(std::move(leaf));
      };
      FusedLoop::Term t;
      t.op = node.op();
      t.dtype = infos_[j].dtype;
      t.dims = infos_[j].dims;
      std::vector<std::size_t> tensor_children;  // indices into ch of the tensor operands
      if (is_unary_elementwise(node.op()))
        tensor_children = {0};
      else if (is_binary_elementwise(node.op()) || node.op() == Op::SMul)
        tensor_children = {0, 1};
      else
        switch (node.op()) {
          case Op::Arg: {
            const auto k = static_cast<std::size_t>(attr(0));
            if (k >= inputs.size())
              throw ExecutionError(fmt::format("execute: arg {} outside a fused kernel", k));
            t.leaf = inputs[k];
            break;
          }
          case Op::Clip:
            tensor_children = {0, 1, 2};
            break;
          case Op::Reshape:
            tensor_children = {1};
            break;
          case Op::Transpose: {
            const auto in_strides = strides_of(infos_[ch[1].index()].dims);
            for (std::int64_t axis : values_[ch[0].index()].ints)
              t.strides.push_back(in_strides[static_cast<std::size_t>(axis)]);
            tensor_children = {1};
            break;
          }
          case Op::Broadcast: {
            const Dims& x = infos_[ch[1].index()].dims;
            const auto in_strides = strides_of(x);
            t.strides.assign(t.dims.size(), 0);
            const std::size_t offset = t.dims.size() - x.size();
            for (std::size_t a = 0; a < x.size(); ++a)
              t.strides[offset + a] = x[a] == 1 ? 0 : in_strides[a];
            tensor_children = {1};
            break;
          }
          case Op::Slice:
            t.strides = strides_of(infos_[ch[3].index()].dims);
            t.offset = attr(1) * t.strides[static_cast<std::size_t>(attr(0))];
            tensor_children = {3};
            break;
          case Op::Pad:
            t.attrs = {attr(0), attr(1), attr(2)};
            tensor_children = {3};
            break;
          case Op::Concat:
            t.attrs = {attr(0)};
            for (std::size_t k = 1; k < ch.size(); ++k) tensor_children.push_back(k);
            break;
          case Op::MatMul:
            t.attrs = {attr(0)};
            tensor_children = {1, 2};
            break;
          case Op::Conv2d:
            t.attrs = {attr(0), attr(1), attr(2), attr(3)};
            tensor_children = {4, 5};
            break;
          case Op::ReduceSum:
          case Op::ReduceMax:
          case Op::ReduceMean:
            if (j != body) return std::nullopt;
            t.attrs = {attr(0)};
            tensor_children = {1};
            break;
          default:
            return std::nullopt;
        }
      for (std::size_t k : tensor_children) {
        const std::size_t term = operand(k);
        if (term == kNone) return std::nullopt;
        t.operands.push_back(term);
      }
      term_of[j] = loop.add(std::move(t));
    }
    return loop.run();
  }

  /// The body's value with its args bound to `inputs`: the body's symbolic nodes evaluated
  /// tensor by tensor in program order (each intermediate materialized; the reference the fused
  /// loop is tested against, and the path for bodies with no loop form).
  std::shared_ptr<const HostTensor> eval_body(
      std::size_t body, const std::vector<std::shared_ptr<const HostTensor>>& inputs) {
    const std::vector<std::size_t> order = body_order(body);
    std::vector<Value> saved;
    for (std::size_t j : order) saved.push_back(std::move(values_[j]));
    for (std::size_t j : order) values_[j] = eval(j, &inputs);
    auto result = values_[body].t;
    for (std::size_t k = 0; k < order.size(); ++k) values_[order[k]] = std::move(saved[k]);
    return result;
  }

  const RecExpr<TensorNode>& p_;
  const Bindings& bindings_;
  std::vector<TensorInfo> infos_;
  std::vector<Value> values_;
  bool fused_loops_;
  NodeTimer on_node_;
  std::vector<std::size_t> stamp_;  // body_order: the generation that last reached each node
  std::size_t generation_ = 0;
  std::vector<std::size_t> term_of_;  // eval_loop: each body node's term (kNone elsewhere)
  FusedLoop::Scratch fused_scratch_;  // eval_loop: blocks shared by the kernels' loops
};

}  // namespace detail
}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXEC_DETAIL_EVALUATOR_H
