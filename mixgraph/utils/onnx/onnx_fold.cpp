#include <mixgraph/utils/onnx/onnx_fold.hpp>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>

namespace mg::onnx_io {

namespace {

bool is_integer(Dtype d) { return !is_floating(d); }

Tensor make(const Shape& shape, Dtype dtype, const std::vector<int64_t>& v) {
  Tensor t;
  t.shape = shape;
  t.dtype = dtype;
  t.bytes.resize(v.size() * dtype_size(dtype));
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == Dtype::b8) {
      t.bytes[i] = v[i] != 0;
    } else {
      std::memcpy(&t.bytes[i * 8], &v[i], 8);
    }
  }
  return t;
}

// The NumPy broadcast of the inputs' shapes.
Shape broadcast(const std::vector<Tensor>& in) {
  size_t rank = 0;
  for (const Tensor& t : in) rank = std::max(rank, t.shape.size());
  Shape out(rank, 1);
  for (const Tensor& t : in) {
    for (size_t k = 0; k < t.shape.size(); ++k) {
      int64_t& o = out[rank - t.shape.size() + k];
      const int64_t d = t.shape[k];
      if (d != o && d != 1 && o != 1) {
        std::string shapes;
        for (const Tensor& u : in)
          shapes += (shapes.empty() ? "" : " and ") + shape_str(u.shape);
        throw std::invalid_argument(
            msg("shapes ", shapes, " do not broadcast"));
      }
      if (o == 1) o = d;
    }
  }
  return out;
}

// t's values repeated to the broadcast shape `out`.
std::vector<int64_t> spread(const Tensor& t, const Shape& out) {
  const std::vector<int64_t> v = t.ints();
  const size_t rank = out.size(), lead = rank - t.shape.size();
  std::vector<int64_t> stride(rank, 0);
  int64_t s = 1;
  for (size_t k = rank; k-- > lead;) {
    const int64_t d = t.shape[k - lead];
    stride[k] = d == 1 ? 0 : s;
    s *= d;
  }
  std::vector<int64_t> r(static_cast<size_t>(shape_size(out)));
  std::vector<int64_t> idx(rank, 0);
  for (size_t i = 0; i < r.size(); ++i) {
    int64_t at = 0;
    for (size_t k = 0; k < rank; ++k) at += idx[k] * stride[k];
    r[i] = v[static_cast<size_t>(at)];
    for (size_t k = rank; k-- > 0;) {
      if (++idx[k] < out[k]) break;
      idx[k] = 0;
    }
  }
  return r;
}

using Fn = std::function<int64_t(int64_t, int64_t)>;

// Two's complement wrapping as NumPy's int64 (signed overflow is undefined
// in C++; INT64_MAX is a common slice end).
int64_t wrap(uint64_t v) { return static_cast<int64_t>(v); }
uint64_t u(int64_t v) { return static_cast<uint64_t>(v); }

const std::map<std::string, Fn>& binary_ops() {
  static const std::map<std::string, Fn> ops = {
      {"Add", [](int64_t a, int64_t b) { return wrap(u(a) + u(b)); }},
      {"Sum", [](int64_t a, int64_t b) { return wrap(u(a) + u(b)); }},
      {"Sub", [](int64_t a, int64_t b) { return wrap(u(a) - u(b)); }},
      {"Mul", [](int64_t a, int64_t b) { return wrap(u(a) * u(b)); }},
      {"Div",
       [](int64_t a, int64_t b) {
         // onnxruntime's integer Div: C++'s, truncating toward zero.
         if (b == 0) throw std::invalid_argument("integer division by zero");
         return b == -1 ? wrap(0 - u(a)) : a / b;
       }},
      {"Max", [](int64_t a, int64_t b) { return std::max(a, b); }},
      {"Min", [](int64_t a, int64_t b) { return std::min(a, b); }},
      {"Equal", [](int64_t a, int64_t b) { return int64_t{a == b}; }},
      {"Less", [](int64_t a, int64_t b) { return int64_t{a < b}; }},
      {"LessOrEqual", [](int64_t a, int64_t b) { return int64_t{a <= b}; }},
      {"Greater", [](int64_t a, int64_t b) { return int64_t{a > b}; }},
      {"GreaterOrEqual", [](int64_t a, int64_t b) { return int64_t{a >= b}; }},
      {"And", [](int64_t a, int64_t b) { return int64_t{a && b}; }},
      {"Or", [](int64_t a, int64_t b) { return int64_t{a || b}; }},
      {"Xor", [](int64_t a, int64_t b) { return int64_t{!a != !b}; }},
  };
  return ops;
}

bool boolean_result(const std::string& op) {
  return op == "Equal" || op == "Less" || op == "LessOrEqual" ||
         op == "Greater" || op == "GreaterOrEqual" || op == "And" ||
         op == "Or" || op == "Xor" || op == "Not";
}

}  // namespace

bool folds_integers(const std::string& op_type) {
  return binary_ops().count(op_type) || op_type == "Mod" || op_type == "Neg" ||
         op_type == "Abs" || op_type == "Not" || op_type == "Where";
}

Tensor fold_integer(const std::string& op, const std::vector<Tensor>& in,
                    bool fmod) {
  const Shape out = broadcast(in);
  const Dtype type =
      boolean_result(op) ? Dtype::b8
      : op == "Where" ? (in.at(1).dtype == Dtype::b8 ? Dtype::b8 : Dtype::i64)
      : in.at(0).dtype == Dtype::b8 ? Dtype::b8
                                    : Dtype::i64;
  std::vector<std::vector<int64_t>> v;
  for (const Tensor& t : in) v.push_back(spread(t, out));
  std::vector<int64_t> r(static_cast<size_t>(shape_size(out)));
  for (size_t i = 0; i < r.size(); ++i) {
    if (op == "Neg") {
      r[i] = wrap(0 - u(v[0][i]));
    } else if (op == "Abs") {
      r[i] = v[0][i] < 0 ? wrap(0 - u(v[0][i])) : v[0][i];
    } else if (op == "Not") {
      r[i] = !v[0][i];
    } else if (op == "Where") {
      r[i] = v[0][i] ? v[1][i] : v[2][i];
    } else if (op == "Mod") {
      const int64_t a = v[0][i], b = v[1][i];
      if (b == 0) throw std::invalid_argument("integer modulo by zero");
      int64_t m = b == -1 ? 0 : a % b;  // fmod: the sign of a
      if (!fmod && m != 0 && ((m < 0) != (b < 0))) m += b;  // Python's
      r[i] = m;
    } else {
      // Max, Min and Sum are variadic: fold from the left.
      const Fn& f = binary_ops().at(op);
      r[i] = v[0][i];
      for (size_t k = 1; k < v.size(); ++k) r[i] = f(r[i], v[k][i]);
      if (v.size() == 1 && boolean_result(op)) r[i] = r[i] != 0;
    }
  }
  return make(out, type, r);
}

Tensor cast_tensor(const Tensor& t, Dtype to) {
  if (to == Dtype::b8) {  // nonzero is true, 0.5 included
    std::vector<int64_t> b;
    for (double r : t.reals()) b.push_back(r != 0);
    return make(t.shape, Dtype::b8, b);
  }
  if (is_integer(to)) {  // integers exactly; floats truncated toward zero
    return make(t.shape, Dtype::i64, t.ints());
  }
  if (is_integer(t.dtype) || to != t.dtype) {
    // Floating data as f32; a double keeps what float holds of it.
    const std::vector<double> r = t.reals();
    Tensor f;
    f.shape = t.shape;
    f.dtype = Dtype::f32;
    f.bytes.resize(r.size() * 4);
    for (size_t i = 0; i < r.size(); ++i) {
      const float x = static_cast<float>(r[i]);
      std::memcpy(&f.bytes[i * 4], &x, 4);
    }
    return f;
  }
  return t;
}

}  // namespace mg::onnx_io
