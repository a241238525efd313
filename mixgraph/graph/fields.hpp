// MG_FIELDS: an options struct's field list, written once inside the struct.
//
//   struct PruneOptions {
//     float rate = 0.9f;
//     MG_FIELDS(rate);
//   };
//
// defines the member `template <class V> void fields(V&& v)` that calls
// v("rate", rate) for each field in order. functions/args_codec.hpp reads
// it to write a function's arguments and read them back (YAML, .nnp, ONNX,
// the harness, the docs tables), so the names listed are the arguments'
// names (NNabla's). A struct whose fields are not all arguments, or that
// adds to a base's list, writes the member by hand (ExtremumOptions). A
// struct with no fields needs nothing. Up to 20 fields.
#pragma once

#define MG_FIELDS(...)                           \
  template <class V>                             \
  void fields(V&& v) {                           \
    MG_FIELDS_EACH_(MG_FIELDS_ONE_, __VA_ARGS__) \
  }                                              \
  static_assert(true, "MG_FIELDS is used with a semicolon")

#define MG_FIELDS_ONE_(f) v(#f, f);
#define MG_FIELDS_CAT_(a, b) MG_FIELDS_CAT2_(a, b)
#define MG_FIELDS_CAT2_(a, b) a##b
#define MG_FIELDS_COUNT_(...)                                                \
  MG_FIELDS_NTH_(__VA_ARGS__, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, \
                 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define MG_FIELDS_NTH_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, \
                       _14, _15, _16, _17, _18, _19, _20, n, ...)              \
  n
#define MG_FIELDS_EACH_(m, ...) \
  MG_FIELDS_CAT_(MG_FIELDS_E, MG_FIELDS_COUNT_(__VA_ARGS__))(m, __VA_ARGS__)
#define MG_FIELDS_E1(m, a) m(a)
#define MG_FIELDS_E2(m, a, ...) m(a) MG_FIELDS_E1(m, __VA_ARGS__)
#define MG_FIELDS_E3(m, a, ...) m(a) MG_FIELDS_E2(m, __VA_ARGS__)
#define MG_FIELDS_E4(m, a, ...) m(a) MG_FIELDS_E3(m, __VA_ARGS__)
#define MG_FIELDS_E5(m, a, ...) m(a) MG_FIELDS_E4(m, __VA_ARGS__)
#define MG_FIELDS_E6(m, a, ...) m(a) MG_FIELDS_E5(m, __VA_ARGS__)
#define MG_FIELDS_E7(m, a, ...) m(a) MG_FIELDS_E6(m, __VA_ARGS__)
#define MG_FIELDS_E8(m, a, ...) m(a) MG_FIELDS_E7(m, __VA_ARGS__)
#define MG_FIELDS_E9(m, a, ...) m(a) MG_FIELDS_E8(m, __VA_ARGS__)
#define MG_FIELDS_E10(m, a, ...) m(a) MG_FIELDS_E9(m, __VA_ARGS__)
#define MG_FIELDS_E11(m, a, ...) m(a) MG_FIELDS_E10(m, __VA_ARGS__)
#define MG_FIELDS_E12(m, a, ...) m(a) MG_FIELDS_E11(m, __VA_ARGS__)
#define MG_FIELDS_E13(m, a, ...) m(a) MG_FIELDS_E12(m, __VA_ARGS__)
#define MG_FIELDS_E14(m, a, ...) m(a) MG_FIELDS_E13(m, __VA_ARGS__)
#define MG_FIELDS_E15(m, a, ...) m(a) MG_FIELDS_E14(m, __VA_ARGS__)
#define MG_FIELDS_E16(m, a, ...) m(a) MG_FIELDS_E15(m, __VA_ARGS__)
#define MG_FIELDS_E17(m, a, ...) m(a) MG_FIELDS_E16(m, __VA_ARGS__)
#define MG_FIELDS_E18(m, a, ...) m(a) MG_FIELDS_E17(m, __VA_ARGS__)
#define MG_FIELDS_E19(m, a, ...) m(a) MG_FIELDS_E18(m, __VA_ARGS__)
#define MG_FIELDS_E20(m, a, ...) m(a) MG_FIELDS_E19(m, __VA_ARGS__)
