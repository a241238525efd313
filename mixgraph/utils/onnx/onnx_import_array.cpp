// load_onnx's converters of shapes, constants, indexing and reductions;
// on constant inputs they fold (onnx_import.cpp) into constants.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/array_ops.hpp>
#include <mixgraph/functions/elementwise_builders.hpp>
#include <mixgraph/functions/indexing.hpp>
#include <mixgraph/functions/min_argmax.hpp>
#include <mixgraph/functions/reduction.hpp>
#include <mixgraph/functions/scatter_ops.hpp>
#include <mixgraph/functions/shape_ops.hpp>
#include <mixgraph/utils/onnx/onnx_import.hpp>

namespace mg::onnx_import {

namespace F = functions;

namespace {

Shape reshape_target(const Op& op, const Shape& in, std::vector<int64_t> s) {
  int free = -1;
  int64_t known = 1;
  for (size_t k = 0; k < s.size(); ++k) {
    if (s[k] == 0 && !op.i("allowzero", 0)) {
      if (k >= in.size()) op.fail("shape entry 0 past the input's rank");
      s[k] = in[k];
    }
    if (s[k] == -1) {
      if (free >= 0) op.fail("two -1 entries in the shape");
      free = static_cast<int>(k);
    } else {
      known *= s[k];
    }
  }
  if (free >= 0) s[free] = known ? shape_size(in) / known : 0;
  if (shape_size(s) != shape_size(in)) {
    op.fail("cannot reshape " + shape_str(in) + " to " + shape_str(s));
  }
  return s;
}

void reshape(const Op& op) {
  if (op.is_const(0)) {  // shape arithmetic on constants
    Tensor t = op.constant(0);
    t.shape = reshape_target(op, t.shape, op.constant(1).ints());
    return op.set_const(0, t);
  }
  op.set(0, F::reshape(op.x(0),
                       reshape_target(op, op.shape(0), op.constant(1).ints())));
}

void flatten(const Op& op) {
  const Shape& s = op.shape(0);
  const int64_t a = norm_axis(op, op.i("axis", 1), s.size() + 1);
  op.set(0, F::reshape(op.x(0), Shape{shape_size(s, 0, static_cast<int>(a)),
                                      shape_size(s, static_cast<int>(a),
                                                 static_cast<int>(s.size()))}));
}

// Squeeze and Unsqueeze, on constants (shape arithmetic) or variables.
void squeeze(const Op& op, bool un) {
  const bool c = op.is_const(0);
  Tensor t;
  Shape s = c ? (t = op.constant(0)).shape : op.shape(0);
  std::vector<int64_t> axes = axes_of(op, 1);
  if (un) {
    const size_t rank = s.size() + axes.size();
    for (auto& a : axes) a = norm_axis(op, a, rank);
    std::sort(axes.begin(), axes.end());
    for (int64_t a : axes) s.insert(s.begin() + a, 1);
  } else {
    if (axes.empty()) {
      for (size_t a = 0; a < s.size(); ++a)
        if (s[a] == 1) axes.push_back(static_cast<int64_t>(a));
    }
    for (auto& a : axes) a = norm_axis(op, a, s.size());
    std::sort(axes.rbegin(), axes.rend());
    for (int64_t a : axes) {
      if (s[a] != 1)
        op.fail("squeezes axis " + std::to_string(a) + " of size " +
                std::to_string(s[a]));
      s.erase(s.begin() + a);
    }
  }
  if (c) {
    t.shape = s;
    return op.set_const(0, t);
  }
  op.set(0, F::reshape(op.x(0), s));
}

// Whether input k is a constant 1-D integer tensor (a shape's entries).
bool int_vector(const Op& op, int k) {
  if (!op.is_const(k)) return false;
  const Tensor t = op.constant(k);
  return t.shape.size() == 1 && !is_floating(t.dtype);
}

void concat(const Op& op) {
  bool shapes = true;
  for (int k = 0; k < op.num_inputs(); ++k)
    shapes = shapes && int_vector(op, k);
  if (shapes) {  // shape lists, exactly; other constants fold through ours
    std::vector<int64_t> v;
    for (int k = 0; k < op.num_inputs(); ++k) {
      const auto part = op.constant(k).ints();
      v.insert(v.end(), part.begin(), part.end());
    }
    return op.set_const(0, int_tensor(v, {static_cast<int64_t>(v.size())}));
  }
  std::vector<VariablePtr> xs;
  for (int k = 0; k < op.num_inputs(); ++k) xs.push_back(op.x(k));
  op.set(0, F::concatenate(xs, static_cast<int>(op.i("axis", 0))));
}

void shape_op(const Op& op) {
  const Shape& s = op.shape(0);
  const int64_t n = static_cast<int64_t>(s.size());
  int64_t start = op.i("start", 0), end = op.i("end", n);
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  std::vector<int64_t> v(s.begin() + start, s.begin() + end);
  op.set_const(0, int_tensor(v, {static_cast<int64_t>(v.size())}));
}

void gather(const Op& op) {
  const int64_t axis = op.i("axis", 0);
  if (!op.is_const(1)) {
    return op.set(0, F::gather(op.x(0), op.x(1, nullptr, false),
                               static_cast<int>(axis), 0));
  }
  // Constant indices: ONNX's negative ones count from the end (y[:, -1]);
  // ours must be in [0, n).
  const bool const_data = op.is_const(0);
  const Shape s = const_data ? op.constant(0).shape : op.shape(0);
  const int64_t a = norm_axis(op, axis, s.size()), n = s[a];
  const Tensor idx = op.constant(1);
  std::vector<int64_t> ids = idx.ints();
  for (int64_t& i : ids) {
    if (i < -n || i >= n) {
      op.fail("index " + std::to_string(i) + " is out of range for axis " +
              std::to_string(a) + " of size " + std::to_string(n));
    }
    if (i < 0) i += n;
  }
  if (const_data && s.size() == 1 && !is_floating(op.constant(0).dtype)) {
    const std::vector<int64_t> vals = op.constant(0).ints();
    std::vector<int64_t> out;  // a shape's entries, exactly
    for (int64_t i : ids) out.push_back(vals[static_cast<size_t>(i)]);
    return op.set_const(0, int_tensor(out, idx.shape));
  }
  op.set(0, F::gather(op.x(0), constant_variable(int_tensor(ids, idx.shape)),
                      static_cast<int>(a), 0));
}

// ONNX's indices (..., k) hold each index tuple on the last axis; ours
// (k, ...) on the first: the same scatter with that axis moved. Swin's
// shifted-window mask is built this way (all constants: folded).
void scatter_nd(const Op& op) {
  const std::string reduction = op.s("reduction", "none");
  if (reduction != "none" && reduction != "add") {
    op.fail("reduction '" + reduction + "' is not supported (none and add)");
  }
  VariablePtr indices = op.x(1, nullptr, false);
  const int r = indices->ndim();
  if (r < 1) op.fail("indices must have at least one axis");
  std::vector<int> perm{r - 1};
  for (int a = 0; a + 1 < r; ++a) perm.push_back(a);
  if (r > 1) indices = F::transpose(indices, perm);
  op.set(0, F::scatter_nd(op.x(2), indices, op.x(0), {}, reduction == "add"));
}

void cast(const Op& op) {
  // The context decides floating types; integers stay exact either way.
  alias(op);
}

void constant(const Op& op) {
  const onnx::AttributeProto* a = op.attr("value");
  if (a) return op.set_const(0, onnx_io::read_tensor(a->t(), op.where()));
  if ((a = op.attr("value_float"))) {
    Tensor t;
    t.dtype = Dtype::f32;
    const float f = a->f();
    t.bytes.resize(4);
    std::memcpy(t.bytes.data(), &f, 4);
    return op.set_const(0, t);
  }
  if ((a = op.attr("value_int")))
    return op.set_const(0, int_tensor({a->i()}, {}));
  if ((a = op.attr("value_ints"))) {
    std::vector<int64_t> v(a->ints().begin(), a->ints().end());
    return op.set_const(0, int_tensor(v, {static_cast<int64_t>(v.size())}));
  }
  op.fail("only value, value_float, value_int and value_ints are supported");
}

void slice(const Op& op) {
  const Shape& s = op.shape(0);
  const std::vector<int64_t> starts = op.constant(1).ints(),
                             ends = op.constant(2).ints();
  std::vector<int64_t> axes =
      op.has(3) ? op.constant(3).ints() : std::vector<int64_t>{};
  if (axes.empty()) {
    for (size_t k = 0; k < starts.size(); ++k)
      axes.push_back(static_cast<int64_t>(k));
  }
  std::vector<int64_t> steps = op.has(4)
                                   ? op.constant(4).ints()
                                   : std::vector<int64_t>(starts.size(), 1);
  const size_t n = s.size();
  std::vector<int64_t> start(n, 0), stop(s.begin(), s.end()), step(n, 1);
  std::vector<int> flipped;
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t a = norm_axis(op, axes[k], n);
    const int64_t dim = s[a];
    if (steps[k] == -1 && (starts[k] == -1 || starts[k] >= dim - 1) &&
        ends[k] < -dim) {
      flipped.push_back(static_cast<int>(a));  // a whole reversed axis
      continue;
    }
    if (steps[k] <= 0) op.fail("steps <= 0 other than a whole flip");
    auto clampi = [dim](int64_t v) {
      if (v < 0) v += dim;
      return std::clamp<int64_t>(v, 0, dim);
    };
    start[a] = clampi(starts[k]);
    stop[a] = std::max(start[a], clampi(ends[k]));
    step[a] = steps[k];
  }
  VariablePtr x = op.x(0);
  if (!flipped.empty()) x = F::flip(x, flipped);
  if (start != std::vector<int64_t>(n, 0) || stop != s ||
      step != std::vector<int64_t>(n, 1)) {
    x = F::slice(x, start, stop, step);
  }
  op.set(0, x);
}

void split(const Op& op) {
  const Shape& s = op.shape(0);
  const int64_t a = norm_axis(op, op.i("axis", 0), s.size());
  std::vector<int64_t> sizes;
  if (op.has(1)) {
    sizes = op.constant(1).ints();
  } else {
    const int64_t parts = op.node.output_size();
    if (s[a] % parts) op.fail("the axis does not split evenly");
    sizes.assign(parts, s[a] / parts);
  }
  int64_t at = 0;
  for (size_t o = 0; o < sizes.size(); ++o) {
    std::vector<int64_t> start(s.size(), 0), stop(s.begin(), s.end());
    start[a] = at;
    stop[a] = at + sizes[o];
    at += sizes[o];
    op.set(static_cast<int>(o), F::slice(op.x(0), start, stop));
  }
}

void expand(const Op& op) {
  VariablePtr x = op.x(0);
  const Shape target = broadcast_shape(op, x->shape(), op.constant(1).ints());
  if (x->ndim() < static_cast<int>(target.size())) {
    Shape s(target.size() - x->ndim(), 1);
    s.insert(s.end(), x->shape().begin(), x->shape().end());
    x = F::reshape(x, s);
  }
  op.set(0, x->shape() == target ? x : F::broadcast(x, target));
}

void pad(const Op& op) {
  const Shape& s = op.shape(0);
  const std::vector<int64_t> pads = op.constant(1).ints();
  const size_t n = s.size();
  if (op.has(3)) op.fail("the axes input is not supported");
  if (pads.size() != 2 * n) op.fail("pads needs 2 x rank entries");
  std::vector<int> width;
  for (size_t a = 0; a < n; ++a) {
    if (pads[a] < 0 || pads[a + n] < 0) op.fail("negative pads (cropping)");
    width.push_back(static_cast<int>(pads[a]));
    width.push_back(static_cast<int>(pads[a + n]));
  }
  const std::string mode = op.s("mode", "constant");
  double value = 0;
  if (op.has(2) && !op.scalar(2, &value))
    op.fail("constant_value not constant");
  std::string ours = mode == "edge" ? "repeat" : mode;
  if (ours != "constant" && ours != "reflect" && ours != "repeat")
    op.fail("mode '" + mode + "'");
  op.set(0, F::pad(op.x(0), width, ours, static_cast<float>(value)));
}

Rule reduce(VariablePtr (*fn)(const VariablePtr&, std::vector<int>, bool)) {
  return [=](const Op& op) {
    // Axes: an attribute up to opset 17 (an input for ReduceSum from 13).
    std::vector<int64_t> axes = axes_of(op, 1);
    if (axes.empty() && op.i("noop_with_empty_axes", 0)) return alias(op);
    op.set(0, fn(op.x(0), to_int(axes), op.i("keepdims", 1) != 0));
  };
}

// Where with ONNX's broadcasting of all three inputs: ours broadcasts the
// condition, and x_true and x_false (a scalar 0.0 beside a tensor, as
// masked_fill writes) are broadcast to the common shape first.
void where(const Op& op) {
  const VariablePtr c = op.x(0, nullptr, false);
  VariablePtr a = op.x(1), b = op.x(2);
  const Shape s = broadcast_shape(
      op, broadcast_shape(op, c->shape(), a->shape()), b->shape());
  if (a->shape() != s) a = F::broadcast(a, s);
  if (b->shape() != s) b = F::broadcast(b, s);
  op.set(0, F::where(c, a, b));
}

void constant_of_shape(const Op& op) {
  const std::vector<int64_t> shape = op.constant(0).ints();
  Tensor value;  // ONNX's default: one float 0
  value.bytes.assign(4, 0);
  if (const auto* a = op.attr("value")) {
    value = onnx_io::read_tensor(a->t(), op.where());
    if (value.size() != 1) op.fail("value must hold one element");
  }
  for (int64_t d : shape) {
    if (d < 0) op.fail("negative dimension in shape " + shape_str(shape));
  }
  Tensor t;
  t.shape = shape;
  t.dtype = value.dtype;
  const size_t e = value.bytes.size();
  t.bytes.resize(static_cast<size_t>(shape_size(shape)) * e);
  for (size_t k = 0; k < t.bytes.size(); k += e)
    std::memcpy(&t.bytes[k], value.bytes.data(), e);
  op.set_const(0, t);
}

// Range: exact in int64 for integers, start + k delta in double then float
// (ONNX's formula) for floating types.
void range(const Op& op) {
  const Tensor start = op.constant(0), limit = op.constant(1),
               delta = op.constant(2);
  if (start.size() != 1 || limit.size() != 1 || delta.size() != 1)
    op.fail("start, limit and delta must be scalars");
  const double s = start.reals()[0], l = limit.reals()[0], d = delta.reals()[0];
  if (d == 0) op.fail("delta is 0");
  const int64_t n =
      std::max<int64_t>(static_cast<int64_t>(std::ceil((l - s) / d)), 0);
  if (!is_floating(start.dtype)) {
    const int64_t s0 = start.ints()[0], d0 = delta.ints()[0];
    std::vector<int64_t> v;
    for (int64_t k = 0; k < n; ++k) v.push_back(s0 + k * d0);
    return op.set_const(0, int_tensor(v, {n}));
  }
  Tensor t;
  t.shape = {n};
  t.dtype = Dtype::f32;
  t.bytes.resize(static_cast<size_t>(n) * 4);
  for (int64_t k = 0; k < n; ++k) {
    const float v = static_cast<float>(s + static_cast<double>(k) * d);
    std::memcpy(&t.bytes[k * 4], &v, 4);
  }
  op.set_const(0, t);
}

}  // namespace

void add_array_rules(std::map<std::string, Rule>& t) {
  t["Cast"] = cast;
  t["Constant"] = constant;
  t["Where"] = where;
  t["ConstantOfShape"] = constant_of_shape;
  t["Range"] = range;
  t["Reshape"] = reshape;
  t["Flatten"] = flatten;
  t["Squeeze"] = [](const Op& op) { squeeze(op, false); };
  t["Unsqueeze"] = [](const Op& op) { squeeze(op, true); };
  t["Transpose"] = [](const Op& op) {
    std::vector<int64_t> perm = op.ints("perm");
    if (perm.empty()) {
      for (int a = op.x(0)->ndim() - 1; a >= 0; --a) perm.push_back(a);
    }
    op.set(0, F::transpose(op.x(0), to_int(perm)));
  };
  t["Concat"] = concat;
  t["Shape"] = shape_op;
  t["Gather"] = gather;
  t["ScatterND"] = scatter_nd;
  t["Slice"] = slice;
  t["Split"] = split;
  t["Expand"] = expand;
  t["Tile"] = [](const Op& op) {
    op.set(0, F::tile(op.x(0), to_int(op.constant(1).ints())));
  };
  t["Pad"] = pad;
  t["ReduceSum"] = reduce(F::sum);
  t["ReduceMean"] = reduce(F::mean);
  t["ReduceMax"] = reduce(F::max);
  t["ReduceMin"] = reduce(F::min);
  t["ReduceProd"] = reduce(F::prod);
}

}  // namespace mg::onnx_import
