// Functions that read by index or by condition: Embed, Gather, OneHot and
// Where. Indices are read as int32 (float indices convert, truncating) and
// checked; they get no gradient (a zero one where asked).
#pragma once

#include <mixgraph/graph/function.hpp>
#include <mixgraph/graph/parameter_scope.hpp>

namespace mg {

/// Embed has no arguments.
struct EmbedOptions {};

namespace decl {
/// Embed's declaration.
inline constexpr FunctionDeclOf<EmbedOptions> Embed{
    {"Embed",
     "embed",
     {Port{"x", Port::integer, false}, Port{"W"}},
     {Port{"y"}}}};
}  // namespace decl

/// Throws std::invalid_argument "<tag><what> holds index 7 at flat index 3,
/// but <has>; indices must be in [0, 5)" unless each of the n ids is in [0,
/// limit): the check every backend makes before it reads indices.
void check_indices(const int32_t* ids, int64_t n, int64_t limit,
                   const std::string& has, const std::string& tag,
                   const char* what);

/// Inputs x (ids, any shape) and W (n_inputs, ...); y = W[x], of shape
/// x.shape + W.shape[1:]. The grad goes to W only, summed in fp32.
class Embed : public Function {
 public:
  explicit Embed(const EmbedOptions&) {}
  bool grad_depends_input_data(int i) const override { return i == 0; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  /// check_indices for x's ids against W's rows.
  void check_ids(const int32_t* ids, const Variables& in) const;
  int64_t rows_ = 0, width_ = 0;  // W seen as (rows, width)
};

struct GatherOptions {
  /// The axis of x the indices pick along.
  int axis = 0;
  /// Leading axes shared by x and indices (as TensorFlow's gather).
  int batch_dims = 0;

  MG_FIELDS(axis, batch_dims);
};

namespace decl {
/// Gather's declaration.
inline constexpr FunctionDeclOf<GatherOptions> Gather{
    {"Gather",
     "gather",
     {Port{"x"}, Port{"indices", Port::integer, false}},
     {Port{"y"}}}};
}  // namespace decl

/// y = x[..., indices, ...] along axis: shape x.shape[:axis] +
/// indices.shape[batch_dims:] + x.shape[axis + 1:].
class Gather : public FunctionWith<GatherOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int i) const override { return i == 1; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  // x as (batch, outer, size, inner), indices as (batch, count).
  int64_t batch_ = 1, outer_ = 1, size_ = 1, inner_ = 1, count_ = 1;
};

struct OneHotOptions {
  /// The size of each one-hot axis; x's last axis has one id per entry.
  Shape shape;

  MG_FIELDS(shape);
};

namespace decl {
/// OneHot's declaration.
inline constexpr FunctionDeclOf<OneHotOptions> OneHot{
    {"OneHot", "one_hot", {Port{"x", Port::integer, false}}, {Port{"y"}}}};
}  // namespace decl

/// x: ids of shape (..., len(shape)); y of shape x.shape[:-1] + shape is 1 at
/// the ids and 0 elsewhere. No gradient.
class OneHot : public FunctionWith<OneHotOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

/// Where has no arguments.
struct WhereOptions {};

namespace decl {
/// Where's declaration.
inline constexpr FunctionDeclOf<WhereOptions> Where{
    {"Where",
     "where",
     {Port{"condition", Port::any, false}, Port{"x_true"}, Port{"x_false"}},
     {Port{"y"}}}};
}  // namespace decl

/// y = condition != 0 ? x_true : x_false. x_true and x_false have one shape;
/// condition broadcasts to it (NumPy rules). The condition gets no gradient.
class Where : public Function {
 public:
  explicit Where(const WhereOptions&) {}
  bool grad_depends_input_data(int i) const override { return i == 0; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

namespace functions {
/// W[x]: rows of W picked by the integer ids in x.
VariablePtr embed(const VariablePtr& x, const VariablePtr& W);
/// x indexed by `indices` along `axis`.
VariablePtr gather(const VariablePtr& x, const VariablePtr& indices,
                   int axis = 0, int batch_dims = 0);
/// One-hot arrays of `shape` at the ids in x's last axis.
VariablePtr one_hot(const VariablePtr& x, Shape shape);
/// x_true where condition is nonzero, x_false elsewhere.
VariablePtr where(const VariablePtr& condition, const VariablePtr& x_true,
                  const VariablePtr& x_false);
}  // namespace functions

namespace parametric_functions {
/// An embedding of `n_inputs` ids into `n_features` values, with "W" in
/// `scope`/embed initialised uniform in (-sqrt(3), sqrt(3)) as in NNabla.
VariablePtr embed(const VariablePtr& x, int64_t n_inputs, int64_t n_features,
                  ParameterScope scope, const Initializer& w_init = nullptr);
}  // namespace parametric_functions

}  // namespace mg
