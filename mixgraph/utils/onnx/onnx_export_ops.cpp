// save_onnx's converters of the elementwise functions, the reductions and
// the shape functions (onnx_export.hpp declares them).
#include <algorithm>
#include <climits>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/ops/binary_ops.hpp>
#include <mixgraph/functions/ops/unary_ops.hpp>
#include <mixgraph/utils/onnx/onnx_export.hpp>

namespace mg::onnx_export {

Converter unary(const char* type) {
  return [type](Node& n) { n.unary(type); };
}
Converter binary(const char* type) {
  return [type](Node& n) { n.op(type, {n.in(0), n.in(1)}, {n.out(0)}); };
}
// y = op(x, val), or op(val, x) when the scalar comes first.
Converter with_scalar(const char* type, bool scalar_first) {
  return [=](Node& n) {
    const std::string x = n.in(0), c = n.scalar(arg_real(n.fn, "val"));
    n.op(type,
         scalar_first ? std::vector<std::string>{c, x}
                      : std::vector<std::string>{x, c},
         {n.out(0)});
  };
}
// A comparison or a logical operator: bool out, cast to the output's type.
Converter predicate(const char* type, int arity, bool scalar, bool negate) {
  return [=](Node& n) {
    std::vector<std::string> ins;
    for (int i = 0; i < arity; ++i) ins.push_back(n.in(i));
    if (scalar) ins.push_back(n.scalar(arg_real(n.fn, "val")));
    const bool logical = std::string(type).rfind("Logical", 0) == 0 ||
                         std::string(type) == "Not";
    const char* onnx_type = type;
    if (logical) {
      // Nonzero is true: the operands as bool first.
      for (auto& s : ins) s = n.e.cast(s, kBool);
      if (std::string(type) == "LogicalAnd") onnx_type = "And";
      if (std::string(type) == "LogicalOr") onnx_type = "Or";
      if (std::string(type) == "LogicalXor") onnx_type = "Xor";
    }
    std::string b = n.tmp();
    n.op(onnx_type, ins, {b});
    if (negate) {
      const std::string nb = n.tmp();
      n.op("Not", {b}, {nb});
      b = nb;
    }
    attr(n.op("Cast", {b}, {n.out(0)}), "to",
         static_cast<int64_t>(n.out_elem(0)));
  };
}
// y = Clip(x, lo, hi).
Converter clip(double lo, double hi) {
  return [=](Node& n) {
    n.op("Clip", {n.in(0), n.scalar(lo), n.scalar(hi)}, {n.out(0)});
  };
}

// Sum, Mean, Max, Min, Prod over `axes` (empty: all).
Converter reduction(const char* type) {
  return [type](Node& n) {
    std::vector<int64_t> axes = arg_ints(n.fn, "axes");
    if (axes.empty()) {
      for (int i = 0; i < n.ndim(0); ++i) axes.push_back(i);
    }
    const int64_t keep = arg_bool(n.fn, "keep_dims");
    onnx::NodeProto* r;
    if (std::string(type) == "ReduceSum") {  // axes an input since opset 13
      r = n.op(type, {n.in(0), n.ints(axes)}, {n.out(0)});
    } else {
      r = n.op(type, {n.in(0)}, {n.out(0)});
      attr(r, "axes", axes);
    }
    attr(r, "keepdims", keep);
  };
}
Converter reduce_all(const char* type) {
  return [type](Node& n) {
    std::vector<int64_t> axes;
    for (int i = 0; i < n.ndim(0); ++i) axes.push_back(i);
    auto* r = std::string(type) == "ReduceSum"
                  ? n.op(type, {n.in(0), n.ints(axes)}, {n.out(0)})
                  : n.op(type, {n.in(0)}, {n.out(0)});
    if (std::string(type) != "ReduceSum") attr(r, "axes", axes);
    attr(r, "keepdims",
         static_cast<int64_t>(n.out_shape(0).size() == n.in_shape(0).size()));
  };
}

void reshape(Node& n) {
  Shape target = n.out_shape(0);
  const Shape& xs = n.in_shape(0);
  // A free batch: a leading dimension equal to the input's batch size copies
  // it (ONNX's 0), so the model runs on any batch.
  if (n.e.options().free_batch && !target.empty() && !xs.empty() &&
      target[0] == xs[0] && xs[0] == n.e.batch()) {
    target[0] = 0;
  }
  n.op("Reshape", {n.in(0), n.ints(target)}, {n.out(0)});
}

void transpose(Node& n) {
  attr(n.op("Transpose", {n.in(0)}, {n.out(0)}), "perm",
       arg_ints(n.fn, "axes"));
}

void concatenate(Node& n) {
  std::vector<std::string> ins;
  for (size_t i = 0; i < n.node.inputs().size(); ++i)
    ins.push_back(n.in(static_cast<int>(i)));
  attr(n.op("Concat", ins, {n.out(0)}), "axis", arg_int(n.fn, "axis"));
}

void stack(Node& n) {
  const int64_t axis = arg_int(n.fn, "axis");
  std::vector<std::string> ins;
  const std::string axes = n.ints({axis});
  for (size_t i = 0; i < n.node.inputs().size(); ++i) {
    const std::string u = n.tmp();
    n.op("Unsqueeze", {n.in(static_cast<int>(i)), axes}, {u});
    ins.push_back(u);
  }
  attr(n.op("Concat", ins, {n.out(0)}), "axis", axis);
}

void split(Node& n) {
  const int64_t axis = arg_int(n.fn, "axis");
  std::vector<std::string> parts;
  for (size_t o = 0; o < n.outs.size(); ++o) parts.push_back(n.tmp());
  attr(n.op("Split", {n.in(0)}, parts), "axis", axis);
  const std::string axes = n.ints({axis});
  for (size_t o = 0; o < n.outs.size(); ++o) {
    n.op("Squeeze", {parts[o], axes}, {n.out(static_cast<int>(o))});
  }
}

void slice(Node& n) {
  const std::vector<int64_t> start = arg_ints(n.fn, "start"),
                             stop = arg_ints(n.fn, "stop");
  std::vector<int64_t> step = arg_ints(n.fn, "step");
  if (step.empty()) step.assign(start.size(), 1);
  std::vector<int64_t> axes;
  for (size_t i = 0; i < start.size(); ++i) {
    if (step[i] <= 0) n.unsupported("a step <= 0 is not written");
    axes.push_back(static_cast<int64_t>(i));
  }
  n.op("Slice",
       {n.in(0), n.ints(start), n.ints(stop), n.ints(axes), n.ints(step)},
       {n.out(0)});
}

void flip(Node& n) {
  const std::vector<int64_t> axes = arg_ints(n.fn, "axes");
  const std::vector<int64_t> starts(axes.size(), -1), steps(axes.size(), -1),
      ends(axes.size(), INT64_MIN);
  n.op("Slice",
       {n.in(0), n.ints(starts), n.ints(ends), n.ints(axes), n.ints(steps)},
       {n.out(0)});
}

void broadcast(Node& n) {
  n.op("Expand", {n.in(0), n.ints(n.out_shape(0))}, {n.out(0)});
}

void tile(Node& n) {
  std::vector<int64_t> reps = arg_ints(n.fn, "reps");
  std::string x = n.in(0);
  const Shape& xs = n.in_shape(0);
  if (reps.size() > xs.size()) {  // leading axes added, as NumPy
    Shape padded(reps.size() - xs.size(), 1);
    padded.insert(padded.end(), xs.begin(), xs.end());
    const std::string r = n.tmp();
    n.op("Reshape", {x, n.ints(padded)}, {r});
    x = r;
  } else {
    reps.insert(reps.begin(), xs.size() - reps.size(), 1);
  }
  n.op("Tile", {x, n.ints(reps)}, {n.out(0)});
}

void pad(Node& n) {
  const std::vector<int64_t> width = arg_ints(n.fn, "pad_width");
  const std::string mode = arg_str(n.fn, "mode");
  const int nd = n.ndim(0);
  const int padded = static_cast<int>(width.size() / 2);
  std::vector<int64_t> pads(2 * nd, 0);
  for (int i = 0; i < padded; ++i) {
    pads[nd - padded + i] = width[2 * i];
    pads[2 * nd - padded + i] = width[2 * i + 1];
  }
  std::string onnx_mode;
  if (mode == "constant") onnx_mode = "constant";
  if (mode == "reflect") onnx_mode = "reflect";
  if (mode == "repeat" || mode == "edge") onnx_mode = "edge";
  if (onnx_mode.empty()) n.unsupported("mode '" + mode + "'");
  std::vector<std::string> ins = {n.in(0), n.ints(pads)};
  if (onnx_mode == "constant") {
    ins.push_back(n.scalar(arg_real(n.fn, "constant_value"), n.out_elem(0)));
  }
  attr(n.op("Pad", ins, {n.out(0)}), "mode", onnx_mode);
}

void batch_matmul(Node& n) {
  auto operand = [&](int i, const char* flag) {
    std::string v = n.in(i);
    if (!arg_bool(n.fn, flag)) return v;
    std::vector<int64_t> perm;
    for (int a = 0; a < n.ndim(i); ++a) perm.push_back(a);
    std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
    const std::string t = n.tmp();
    attr(n.op("Transpose", {v}, {t}), "perm", perm);
    return t;
  };
  n.op("MatMul", {operand(0, "transpose_a"), operand(1, "transpose_b")},
       {n.out(0)});
}

void softmax(const char* type, Node& n) {
  attr(n.op(type, {n.in(0)}, {n.out(0)}), "axis", arg_int(n.fn, "axis"));
}

// y = x * f(x) (Swish: Sigmoid; Mish: Tanh(Softplus)).
Converter x_times(std::vector<const char*> chain) {
  return [chain](Node& n) {
    const std::string x = n.in(0);
    std::string v = x;
    for (const char* type : chain) {
      const std::string t = n.tmp();
      n.op(type, {v}, {t});
      v = t;
    }
    n.op("Mul", {x, v}, {n.out(0)});
  };
}
// y = f_k(...f_1(x)): a chain of unary operators.
Converter chain(std::vector<const char*> types) {
  return [types](Node& n) {
    std::string v = n.in(0);
    for (size_t i = 0; i < types.size(); ++i) {
      const std::string t = i + 1 == types.size() ? n.out(0) : n.tmp();
      n.op(types[i], {v}, {t});
      v = t;
    }
  };
}

void identity(Node& n) { n.op("Identity", {n.in(0)}, {n.out(0)}); }

}  // namespace mg::onnx_export
