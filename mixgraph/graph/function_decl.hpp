// A function's declaration: the one place its names, its inputs and outputs
// and its default precision are written. The registry, the builders' error
// tags, the YAML codec, the default precision policy, mg::function_list()
// and the test harness all read it; a function's name typed anywhere else is
// a bug.
//
// A declaration is a constant in namespace mg::decl named as the function:
//   inline constexpr FunctionDeclOf<AffineOptions> Affine{{
//       "Affine", "affine",
//       {Port{"x"}, Port{"W"}, Port{"b", Port::floating, true, true}},
//       {Port{"y"}}}};
// It lives in graph/ because the Function base holds it; the registry and
// the functions that use it are in functions/.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include <mixgraph/graph/fields.hpp>

namespace mg {

/// How a function runs under a half or bfloat16 context. Every function
/// accumulates its sums in fp32 whatever its precision (that is not a
/// choice: fp16 sums are never right), so the one choice is the type it
/// stores and computes its elementwise math in.
enum class Precision : uint8_t {
  reduced,  // the type_config's type (fp16/bf16) in and out
  float32,  // fp32 in and out whatever the context (Exp, Log: their range)
};

/// "reduced" or "float".
const char* precision_name(Precision p);

/// One input or output of a function.
struct Port {
  /// What the port holds.
  enum Kind : uint8_t {
    floating,  // follows the type_config: fp32, fp16 or bf16
    integer,   // labels, ids, indices: an integer type, never rounded
    float32,   // fp32 under every type_config (losses, their scaled seeds)
    any,       // a layout function's data: keeps the type its input holds,
               // integers included (Reshape, Slice, Concatenate, ...)
  };
  const char* name = "";
  Kind kind = floating;
  /// Inputs: whether backward computes this input's grad.
  bool grad = true;
  /// Inputs: whether it may be left out (a bias).
  bool optional = false;
};

/// A fixed-capacity list of ports, so that declarations are constants.
struct Ports {
  static constexpr int kMax = 8;
  Port at[kMax] = {};
  int size = 0;
  constexpr Ports() = default;
  constexpr Ports(std::initializer_list<Port> ports) {
    for (const Port& p : ports) at[size++] = p;
  }
  constexpr const Port* begin() const { return at; }
  constexpr const Port* end() const { return at + size; }
  constexpr const Port& operator[](int i) const { return at[i]; }
};

/// What a function is, independent of backends.
struct FunctionDecl {
  /// PascalCase: the registry's key, YAML, error messages ("MaxPooling").
  const char* name = "";
  /// snake_case: builders and error tags ("max_pooling").
  const char* snake = "";
  Ports inputs;
  Ports outputs;
  /// The default precision; the precision policy may override it.
  Precision precision = Precision::reduced;
  /// The last input repeats any number of times (Concatenate, Stack).
  bool variadic = false;
  /// The number of outputs is set by the options, not by `outputs` (Split:
  /// `outputs` then declares the one kind they all share).
  bool variadic_outputs = false;
  /// Ours, not one of NNabla's: the files NNabla's and ONNX's readers take
  /// hold it as its Function::composition() of NNabla's functions
  /// (ScaledDotProductAttention).
  bool composed = false;

  /// The inputs that must be given.
  constexpr int min_inputs() const {
    int n = 0;
    for (const Port& p : inputs) n += p.optional ? 0 : 1;
    return n;
  }
  /// The most inputs it takes (INT32_MAX when variadic).
  constexpr int max_inputs() const {
    return variadic ? INT32_MAX : inputs.size;
  }
  /// The declared port of input i (the last one for a variadic tail).
  constexpr const Port& input(int i) const { return inputs[input_index(i)]; }
  /// The port input i is given on when inputs are placed by position (all
  /// but FusedConvolution: Function::input_port).
  constexpr int input_index(int i) const {
    return i < inputs.size ? i : inputs.size - 1;
  }
  /// The declared port of output o (the last one for variadic outputs).
  constexpr const Port& output(int o) const {
    return outputs[o < outputs.size ? o : outputs.size - 1];
  }
  /// Whether any input or output is of `kind`.
  constexpr bool has(Port::Kind kind) const {
    for (const Port& p : inputs) {
      if (p.kind == kind) return true;
    }
    for (const Port& p : outputs) {
      if (p.kind == kind) return true;
    }
    return false;
  }
  /// "[max_pooling] ": the prefix of every error message.
  std::string tag() const { return std::string("[") + snake + "] "; }
};

/// A declaration that also names the options struct the function is made
/// from, so that builders and registrations cannot pair it with another.
template <class Options>
struct FunctionDeclOf : FunctionDecl {
  using options_type = Options;
};

}  // namespace mg
