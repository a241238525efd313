// Options structs <-> FunctionArgs, written once per struct.
//
// An options struct with fields lists them once, inside it, with MG_FIELDS
// (graph/fields.hpp):
//   struct AffineOptions {
//     int base_axis = 1;
//     MG_FIELDS(base_axis);
//   };
// which defines the member `template <class V> void fields(V&& v)` calling
// v("base_axis", base_axis). The registry uses it to record each function's
// arguments and to rebuild a function from arguments read back from a file. A
// struct with no fields needs nothing. A field's default member initializer is
// the argument's default (NNabla's, for NNabla's arguments): an argument left
// out keeps it.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <mixgraph/contexts/dtype.hpp>
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/graph/function_args.hpp>

namespace mg {

namespace args_detail {

inline ArgValue to_value(bool v) { return v; }
inline ArgValue to_value(int v) { return static_cast<int64_t>(v); }
inline ArgValue to_value(int64_t v) { return v; }
inline ArgValue to_value(float v) { return static_cast<double>(v); }
inline ArgValue to_value(double v) { return v; }
inline ArgValue to_value(const std::string& v) { return v; }
inline ArgValue to_value(Dtype v) { return std::string(dtype_name(v)); }
inline ArgValue to_value(const std::vector<int>& v) {
  return std::vector<int64_t>(v.begin(), v.end());
}
inline ArgValue to_value(const std::vector<int64_t>& v) { return v; }
inline ArgValue to_value(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}

[[noreturn]] inline void type_error(const std::string& fn, const char* name,
                                    const char* want, const ArgValue& got) {
  throw std::invalid_argument(msg("[", fn, "] argument '", name, "' must be ",
                                  want, ", got ", arg_type_name(got)));
}

inline void from_value(const ArgValue& a, bool& out, const std::string& fn,
                       const char* name) {
  if (auto p = std::get_if<bool>(&a)) return void(out = *p);
  type_error(fn, name, "a bool", a);
}
template <class I>
std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>> from_value(
    const ArgValue& a, I& out, const std::string& fn, const char* name) {
  if (auto p = std::get_if<int64_t>(&a)) return void(out = static_cast<I>(*p));
  type_error(fn, name, "an int", a);
}
template <class F>
std::enable_if_t<std::is_floating_point_v<F>> from_value(const ArgValue& a,
                                                         F& out,
                                                         const std::string& fn,
                                                         const char* name) {
  if (auto p = std::get_if<double>(&a)) return void(out = static_cast<F>(*p));
  if (auto p = std::get_if<int64_t>(&a)) return void(out = static_cast<F>(*p));
  type_error(fn, name, "a number", a);
}
inline void from_value(const ArgValue& a, std::string& out,
                       const std::string& fn, const char* name) {
  if (auto p = std::get_if<std::string>(&a)) return void(out = *p);
  type_error(fn, name, "a string", a);
}
inline void from_value(const ArgValue& a, Dtype& out, const std::string& fn,
                       const char* name) {
  std::string s;
  from_value(a, s, fn, name);
  out = parse_dtype(s);
}
template <class I>
std::enable_if_t<std::is_integral_v<I>> from_value(const ArgValue& a,
                                                   std::vector<I>& out,
                                                   const std::string& fn,
                                                   const char* name) {
  if (auto p = std::get_if<std::vector<int64_t>>(&a)) {
    out.assign(p->begin(), p->end());
    return;
  }
  // An empty YAML list carries no element type.
  if (auto p = std::get_if<std::vector<double>>(&a); p && p->empty()) {
    out.clear();
    return;
  }
  type_error(fn, name, "an int list", a);
}
inline void from_value(const ArgValue& a, std::vector<float>& out,
                       const std::string& fn, const char* name) {
  if (auto p = std::get_if<std::vector<double>>(&a)) {
    out.assign(p->begin(), p->end());
    return;
  }
  if (auto p = std::get_if<std::vector<int64_t>>(&a)) {
    out.assign(p->begin(), p->end());
    return;
  }
  type_error(fn, name, "a float list", a);
}

struct Writer {
  FunctionArgs& out;
  template <class T>
  void operator()(const char* name, const T& field) {
    out.emplace_back(name, to_value(field));
  }
};

struct Reader {
  const FunctionArgs& in;
  const std::string& fn;
  template <class T>
  void operator()(const char* name, T& field) {
    auto it = std::find_if(in.begin(), in.end(),
                           [&](const auto& kv) { return kv.first == name; });
    // NNabla's optional arguments are optional: a network written with
    // NNabla's lists leaves them out and means their defaults.
    if (it != in.end()) from_value(it->second, field, fn, name);
  }
};

struct Probe {
  template <class T>
  void operator()(const char*, T&) {}
};

template <class O, class = void>
struct HasFields : std::false_type {};
template <class O>
struct HasFields<
    O, std::void_t<decltype(std::declval<O&>().fields(std::declval<Probe&>()))>>
    : std::true_type {};

}  // namespace args_detail

/// Whether an options type can be written and read back.
template <class O>
inline constexpr bool describable_options =
    std::is_empty_v<O> || args_detail::HasFields<O>::value;

/// The options as arguments.
template <class O>
FunctionArgs options_to_args(const O& opts) {
  static_assert(describable_options<O>,
                "options with fields list them with MG_FIELDS");
  FunctionArgs args;
  if constexpr (!std::is_empty_v<O>) {
    O copy = opts;
    copy.fields(args_detail::Writer{args});
  }
  return args;
}

/// Options from arguments: a field left out keeps its default, a field given
/// must have its type, and an argument the options do not have is an error.
/// `fn` tags the errors.
template <class O>
O options_from_args(const FunctionArgs& args, const std::string& fn) {
  O opts{};
  FunctionArgs known;
  if constexpr (!std::is_empty_v<O>) {
    opts.fields(args_detail::Reader{args, fn});
    known = options_to_args(opts);
  }
  for (const auto& kv : args) {
    const bool ok = std::any_of(known.begin(), known.end(), [&](const auto& k) {
      return k.first == kv.first;
    });
    if (!ok) {
      throw std::invalid_argument(
          msg("[", fn, "] unknown argument '", kv.first, "'"));
    }
  }
  return opts;
}

}  // namespace mg
