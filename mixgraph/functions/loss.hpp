// Losses and metrics: SoftmaxCrossEntropy, CategoricalCrossEntropy,
// SigmoidCrossEntropy, KLMultinomial, TopNError and ConfusionMatrix (the
// elementwise losses and BinaryError are functors in ops/).
#pragma once

#include <mixgraph/functions/softmax.hpp>

namespace mg {

struct SoftmaxCrossEntropyOptions {
  /// The class axis of x; negative counts from the end.
  int axis = -1;

  MG_FIELDS(axis);
};

namespace decl {
/// SoftmaxCrossEntropy's declaration.
inline constexpr FunctionDeclOf<SoftmaxCrossEntropyOptions> SoftmaxCrossEntropy{
    {"SoftmaxCrossEntropy",
     "softmax_cross_entropy",
     {Port{"x"}, Port{"t", Port::integer, false}},
     {Port{"y"}},
     // A loss: it runs in fp32 under half and bfloat16 (as PyTorch's autocast
     // runs its losses), so the loss and the scaled seed of backward are fp32.
     Precision::float32}};
}  // namespace decl

/// The shape rule of a loss over a class axis against integer labels
/// (SoftmaxCrossEntropy, CategoricalCrossEntropy): x (..., C, ...); t:
/// integer class labels, x's shape with 1 at the axis (NNabla: x (N, C), t
/// (N, 1)); y: t's shape. t gets no gradient.
class ClassLabelLoss : public FunctionWith<SoftmaxCrossEntropyOptions> {
 public:
  using FunctionWith::FunctionWith;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  AxisSplit split_;
};

/// Throws std::invalid_argument "<tag>t holds label 7 at flat index 3, but
/// x with shape (4, 5) has 5 classes along axis 1: labels must be in [0,
/// 5)" unless each of the n labels is a class of x (split by s): the check
/// every backend makes before it reads labels.
void check_class_labels(const int32_t* labels, int64_t n, const Shape& x,
                        const AxisSplit& s, const std::string& tag);

/// Throws std::invalid_argument: t holds class labels and takes no grad.
[[noreturn]] void refuse_label_grad(const std::string& tag);

/// y = -log softmax(x)[t] along the axis (shapes as ClassLabelLoss).
class SoftmaxCrossEntropy : public ClassLabelLoss {
 public:
  using ClassLabelLoss::ClassLabelLoss;
};

/// SigmoidCrossEntropy has no options.
struct SigmoidCrossEntropyOptions {};

namespace decl {
/// SigmoidCrossEntropy's declaration.
inline constexpr FunctionDeclOf<SigmoidCrossEntropyOptions> SigmoidCrossEntropy{
    {"SigmoidCrossEntropy",
     "sigmoid_cross_entropy",
     {Port{"x"}, Port{"t", Port::floating, false}},
     {Port{"y"}},
     // A loss: it runs in fp32 under half and bfloat16 (as PyTorch's autocast
     // runs its losses), so the loss and the scaled seed of backward are fp32.
     Precision::float32}};
}  // namespace decl

/// y = -(t log s(x) + (1 - t) log(1 - s(x))) elementwise, computed as
/// max(x, 0) - x t + log(1 + exp(-|x|)); t in [0, 1], x's shape; t gets no
/// gradient.
class SigmoidCrossEntropy : public Function {
 public:
  explicit SigmoidCrossEntropy(const SigmoidCrossEntropyOptions&) {}

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
};

struct TopNErrorOptions {
  /// The class axis of x; negative counts from the end.
  int axis = -1;
  /// An answer is right when the true class is among the n best.
  int n = 1;

  MG_FIELDS(axis, n);
};

namespace decl {
/// TopNError's declaration.
inline constexpr FunctionDeclOf<TopNErrorOptions> TopNError{
    {"TopNError",
     "top_n_error",
     {Port{"x", Port::floating, false}, Port{"t", Port::integer, false}},
     {Port{"y"}}}};
}  // namespace decl

/// y = 1 where more than n classes score at least the true class's score,
/// else 0 (NNabla's rule: ties count against). Shapes as SoftmaxCrossEntropy.
/// A metric: it has no gradient.
class TopNError : public FunctionWith<TopNErrorOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  AxisSplit split_;
};

namespace decl {
/// CategoricalCrossEntropy's declaration: a loss, fp32 under half and
/// bfloat16 as SoftmaxCrossEntropy.
inline constexpr FunctionDeclOf<SoftmaxCrossEntropyOptions>
    CategoricalCrossEntropy{{"CategoricalCrossEntropy",
                             "categorical_cross_entropy",
                             {Port{"x"}, Port{"t", Port::integer, false}},
                             {Port{"y"}},
                             Precision::float32}};
}  // namespace decl

/// y = -log x[t] along the axis, for probabilities x (a softmax's output);
/// shapes as ClassLabelLoss. x is clamped at 1e-12 inside the log (as
/// BinaryCrossEntropy), so a zero probability gives 27.6, not inf. Prefer
/// SoftmaxCrossEntropy on logits: it never takes the log of a rounded
/// probability.
class CategoricalCrossEntropy : public ClassLabelLoss {
 public:
  using ClassLabelLoss::ClassLabelLoss;
};

struct KLMultinomialOptions {
  /// The axes from base_axis on hold one distribution.
  int base_axis = 1;

  MG_FIELDS(base_axis);
};

namespace decl {
/// KLMultinomial's declaration: a loss, fp32 under half and bfloat16.
inline constexpr FunctionDeclOf<KLMultinomialOptions> KLMultinomial{
    {"KLMultinomial",
     "kl_multinomial",
     {Port{"p"}, Port{"q"}},
     {Port{"y"}},
     Precision::float32}};
}  // namespace decl

/// y = sum p (log(p + 1e-8) - log(q + 1e-8)) over the axes from base_axis
/// (NNabla's), shape p.shape[:base_axis] + (1,); summed in double. dp =
/// dy (log(p + 1e-8) - log(q + 1e-8) + 1), dq = -dy p / (q + 1e-8) (NNabla
/// divides by q alone, which is not the derivative of its own forward).
class KLMultinomial : public FunctionWith<KLMultinomialOptions> {
 public:
  using FunctionWith::FunctionWith;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  int64_t rows_ = 0, row_size_ = 0;
};

struct ConfusionMatrixOptions {
  /// The class axis of x; negative counts from the end (NNabla's default,
  /// len(x.shape) - 1: the last).
  int axis = -1;

  MG_FIELDS(axis);
};

namespace decl {
/// ConfusionMatrix's declaration: counts in fp32 (exact to 2^24).
inline constexpr FunctionDeclOf<ConfusionMatrixOptions> ConfusionMatrix{
    {"ConfusionMatrix",
     "confusion_matrix",
     {Port{"x", Port::floating, false}, Port{"t", Port::integer, false}},
     {Port{"y", Port::float32}}}};
}  // namespace decl

/// y (C, C): y[t][k] counts the positions of true class t whose best score
/// in x is class k (the first best on ties). Shapes of x and t as
/// SoftmaxCrossEntropy. A metric: no gradient. The counts are held in fp32
/// whatever the type_config (half would stop counting at 2048).
class ConfusionMatrix : public FunctionWith<ConfusionMatrixOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  AxisSplit split_;
};

namespace functions {
/// Cross entropy of softmax(x) along `axis` against integer labels t.
VariablePtr softmax_cross_entropy(const VariablePtr& x, const VariablePtr& t,
                                  int axis = -1);
/// Cross entropy of sigmoid(x) against targets t in [0, 1], elementwise.
VariablePtr sigmoid_cross_entropy(const VariablePtr& x, const VariablePtr& t);
/// (x0 - x1)^2, elementwise with NumPy broadcasting.
VariablePtr squared_error(const VariablePtr& x0, const VariablePtr& x1);
/// |x0 - x1|, elementwise with broadcasting.
VariablePtr absolute_error(const VariablePtr& x0, const VariablePtr& x1);
/// NNabla's Huber loss: d^2 for |d| < delta, delta (2 |d| - delta) beyond
/// (d = x0 - x1).
VariablePtr huber_loss(const VariablePtr& x0, const VariablePtr& x1,
                       float delta = 1.0f);
/// max(|x0 - x1| - epsilon, 0).
VariablePtr epsilon_insensitive_loss(const VariablePtr& x0,
                                     const VariablePtr& x1, float epsilon);
/// -(t log x + (1 - t) log(1 - x)) for probabilities x and targets t in
/// [0, 1], elementwise; both have grads.
VariablePtr binary_cross_entropy(const VariablePtr& x, const VariablePtr& t);
/// 1 where label t is not among the n best classes of x along `axis`, and
/// where any of its scores is nan (NNabla counts those right: compared
/// with nan, no class scores above the label).
VariablePtr top_n_error(const VariablePtr& x, const VariablePtr& t,
                        int axis = -1, int n = 1);
/// -log x[t] along `axis`, for probabilities x and integer labels t.
VariablePtr categorical_cross_entropy(const VariablePtr& x,
                                      const VariablePtr& t, int axis = -1);
/// KL(p || q) per distribution (the axes from base_axis on).
VariablePtr kl_multinomial(const VariablePtr& p, const VariablePtr& q,
                           int base_axis = 1);
/// The (C, C) confusion matrix of x's best classes against labels t.
VariablePtr confusion_matrix(const VariablePtr& x, const VariablePtr& t,
                             int axis = -1);
}  // namespace functions

}  // namespace mg
