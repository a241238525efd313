#include <mixgraph/graph/check_finite.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

#include <mixgraph/contexts/convert_one.hpp>
#include <mixgraph/contexts/half.hpp>
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/graph/function.hpp>

namespace mg {

namespace detail {
thread_local int check_finite_depth = 0;
}  // namespace detail

CheckFiniteGuard::CheckFiniteGuard() { ++detail::check_finite_depth; }
CheckFiniteGuard::~CheckFiniteGuard() { --detail::check_finite_depth; }
bool check_finite_enabled() { return detail::check_finite_depth > 0; }

namespace {

struct FirstBad {
  int64_t index = -1;  // -1: all finite
  int64_t count = 0;
  double value = 0;
};

// The exponent bits all set is inf or nan, in each floating type; the
// integer types hold no such values. Reads the host copy (a device array is
// copied over: the guard is for debugging).
FirstBad find_non_finite(SyncedArray& a) {
  FirstBad r;
  const Dtype dt = a.dtype();
  const int64_t n = a.size();
  if (n == 0 || (dt != Dtype::f32 && dt != Dtype::f16 && dt != Dtype::bf16)) {
    return r;
  }
  const void* p = a.get(dt, "cpu");
  for (int64_t i = 0; i < n; ++i) {
    double v = 0;
    bool bad = false;
    if (dt == Dtype::f32) {
      const float f = static_cast<const float*>(p)[i];
      bad = !std::isfinite(f);
      v = f;
    } else {
      uint16_t bits;
      std::memcpy(&bits, static_cast<const uint16_t*>(p) + i, 2);
      if (dt == Dtype::f16) {
        bad = (bits & 0x7c00u) == 0x7c00u;
        if (bad) v = convert_one<float>(static_cast<const Half*>(p)[i]);
      } else {
        bad = (bits & 0x7f80u) == 0x7f80u;
        if (bad) v = convert_one<float>(static_cast<const BFloat16*>(p)[i]);
      }
    }
    if (!bad) continue;
    if (r.count++ == 0) {
      r.index = i;
      r.value = v;
    }
  }
  return r;
}

// The name of port i, numbered past the last one of a variadic function
// (Concatenate's x, x1, x2, ...).
std::string port_name(const Ports& ports, size_t i, const char* fallback) {
  if (ports.size == 0) return msg(fallback, i);
  if (i < static_cast<size_t>(ports.size))
    return ports[static_cast<int>(i)].name;
  return msg(ports[ports.size - 1].name, i);
}

// The name of f's input i: its port's (FusedConvolution places optional
// inputs by their count, not their position).
std::string input_name(const Function& f, size_t i) {
  const FunctionDecl& d = f.decl();
  if (d.variadic || d.inputs.size == 0) return port_name(d.inputs, i, "x");
  return f.input_decl(static_cast<int>(i)).name;
}

// "x (2, 3) f16, weight (3, 3) f16": each variable with name_of(i).
template <class NameOf>
std::string describe(const Variables& vars, NameOf name_of) {
  std::string s;
  for (size_t i = 0; i < vars.size(); ++i) {
    if (i) s += ", ";
    s += msg(name_of(i), " ", shape_str(vars[i]->shape()), " ",
             dtype_name(vars[i]->data()->array().dtype()));
  }
  return s;
}

std::string value_str(double v) {
  return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
}

[[noreturn]] void fail(const Function& f, const char* pass,
                       const std::string& what, const FirstBad& bad,
                       int64_t size, const Variables& in, const Variables& out,
                       const std::string& extra) {
  throw NonFiniteError(
      msg("[check_finite] ", f.name(), " (", f.decl().snake, ") ", pass, ": ",
          what, " is ", value_str(bad.value), " at index ", bad.index, " (",
          bad.count, " of its ", size, " elements are not finite); inputs: ",
          describe(in, [&](size_t i) { return input_name(f, i); }),
          "; outputs: ",
          describe(
              out,
              [&](size_t o) { return port_name(f.decl().outputs, o, "y"); }),
          extra),
      f.name(), pass, bad.index, bad.value);
}

}  // namespace

namespace detail {

void check_outputs_finite(const Function& f, const Variables& in,
                          const Variables& out) {
  for (size_t o = 0; o < out.size(); ++o) {
    const FirstBad bad = find_non_finite(out[o]->data()->array());
    if (bad.index < 0) continue;
    fail(f, "forward", msg("output ", port_name(f.decl().outputs, o, "y")), bad,
         out[o]->size(), in, out, "");
  }
}

void check_grads_finite(const Function& f, const Variables& in,
                        const Variables& out,
                        const std::vector<bool>& propagate_down,
                        const std::string& seed) {
  for (size_t i = 0; i < in.size(); ++i) {
    if (!propagate_down[i]) continue;
    const FirstBad bad = find_non_finite(in[i]->grad()->array());
    if (bad.index < 0) continue;
    // Was it already bad in what came down? Then this function passed it
    // on; say so, so the reader looks further down the graph.
    // (An input grad that took over its output's buffer, in place, is
    // not compared with itself.)
    bool passed_on = false;
    for (Variable* y : out) {
      if (y->grad()->array_ptr() == in[i]->grad()->array_ptr()) continue;
      passed_on = passed_on || find_non_finite(y->grad()->array()).index >= 0;
    }
    fail(f, "backward", msg("the grad of input ", input_name(f, i)), bad,
         in[i]->size(), in, out,
         msg(passed_on ? "; its output grad was already not finite"
                       : "; its output grads are finite: the overflow "
                         "started here",
             seed.empty() ? "" : "; backward was seeded with " + seed));
  }
}

}  // namespace detail

}  // namespace mg
