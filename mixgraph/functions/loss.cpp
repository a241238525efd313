#include <mixgraph/functions/loss.hpp>

#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/elementwise.hpp>
#include <mixgraph/functions/ops/binary_ops.hpp>

namespace mg {

namespace {

// t must be x's shape with 1 at the class axis.
void check_label_shape(const Shape& x, const Shape& t, const AxisSplit& s,
                       const std::string& tag) {
  Shape expected = x;
  expected[s.axis] = 1;
  if (t != expected) {
    throw std::invalid_argument(msg(
        tag, "x with shape ", shape_str(x), " and t with shape ", shape_str(t),
        " do not match: t holds one class label per position, so it must have "
        "shape ",
        shape_str(expected), " (x's shape with 1 at axis ", s.axis, ")"));
  }
}

void check_same_shape(const Variables& in, const char* a, const char* b,
                      const std::string& tag) {
  if (in[0]->shape() != in[1]->shape()) {
    throw std::invalid_argument(msg(tag, a, " with shape ",
                                    shape_str(in[0]->shape()), " and ", b,
                                    " with shape ", shape_str(in[1]->shape()),
                                    " must have the same shape"));
  }
}

}  // namespace

void check_class_labels(const int32_t* labels, int64_t n, const Shape& x,
                        const AxisSplit& s, const std::string& tag) {
  for (int64_t i = 0; i < n; ++i) {
    if (labels[i] < 0 || labels[i] >= s.size) {
      throw std::invalid_argument(
          msg(tag, "t holds label ", labels[i], " at flat index ", i,
              ", but x with shape ", shape_str(x), " has ", s.size,
              " classes along axis ", s.axis, ": labels must be in [0, ",
              s.size, ")"));
    }
  }
}

void refuse_label_grad(const std::string& tag) {
  throw std::invalid_argument(msg(tag,
                                  "t holds class labels and has no gradient; "
                                  "make t need_grad = false"));
}

void ClassLabelLoss::setup_impl(const Variables& in, const Variables& out) {
  split_ = split_at_axis(in[0]->shape(), opts_.axis, tag());
  check_label_shape(in[0]->shape(), in[1]->shape(), split_, tag());
  out[0]->reshape(in[1]->shape());
}

void KLMultinomial::setup_impl(const Variables& in, const Variables& out) {
  check_same_shape(in, "p", "q", tag());
  const Shape& s = in[0]->shape();
  const int nd = static_cast<int>(s.size());
  if (opts_.base_axis < 0 || opts_.base_axis >= nd) {
    throw std::invalid_argument(msg(tag(), "base_axis ", opts_.base_axis,
                                    " must be in [0, ", nd,
                                    ") for p with shape ", shape_str(s)));
  }
  rows_ = shape_size(s, 0, opts_.base_axis);
  row_size_ = shape_size(s, opts_.base_axis, nd);
  Shape y(s.begin(), s.begin() + opts_.base_axis);
  y.push_back(1);
  out[0]->reshape(y);
}

void ConfusionMatrix::setup_impl(const Variables& in, const Variables& out) {
  split_ = split_at_axis(in[0]->shape(), opts_.axis, tag());
  check_label_shape(in[0]->shape(), in[1]->shape(), split_, tag());
  out[0]->reshape({split_.size, split_.size});
}

void SigmoidCrossEntropy::setup_impl(const Variables& in,
                                     const Variables& out) {
  check_same_shape(in, "x", "t", tag());
  out[0]->reshape(in[0]->shape());
}

void TopNError::setup_impl(const Variables& in, const Variables& out) {
  split_ = split_at_axis(in[0]->shape(), opts_.axis, tag());
  check_label_shape(in[0]->shape(), in[1]->shape(), split_, tag());
  if (opts_.n < 1) {
    throw std::invalid_argument(
        msg(tag(), "n must be at least 1, got ", opts_.n));
  }
  out[0]->reshape(in[1]->shape());
}

namespace functions {

VariablePtr softmax_cross_entropy(const VariablePtr& x, const VariablePtr& t,
                                  int axis) {
  return apply_function1(decl::SoftmaxCrossEntropy,
                         SoftmaxCrossEntropyOptions{axis}, {x, t});
}

VariablePtr sigmoid_cross_entropy(const VariablePtr& x, const VariablePtr& t) {
  return apply_function1(decl::SigmoidCrossEntropy,
                         SigmoidCrossEntropyOptions{}, {x, t});
}

VariablePtr squared_error(const VariablePtr& x0, const VariablePtr& x1) {
  return apply_function1(decl::binary<ops::SquaredError>, ops::SquaredError{},
                         {x0, x1});
}

VariablePtr absolute_error(const VariablePtr& x0, const VariablePtr& x1) {
  return apply_function1(decl::binary<ops::AbsoluteError>, ops::AbsoluteError{},
                         {x0, x1});
}

VariablePtr huber_loss(const VariablePtr& x0, const VariablePtr& x1,
                       float delta) {
  if (!(delta > 0.0f)) {
    throw std::invalid_argument(
        msg("[huber_loss] delta ", delta, " must be positive"));
  }
  return apply_function1(decl::binary<ops::HuberLoss>, ops::HuberLoss{delta},
                         {x0, x1});
}

VariablePtr epsilon_insensitive_loss(const VariablePtr& x0,
                                     const VariablePtr& x1, float epsilon) {
  if (!(epsilon >= 0.0f)) {
    throw std::invalid_argument(msg("[epsilon_insensitive_loss] epsilon ",
                                    epsilon, " must not be negative"));
  }
  return apply_function1(decl::binary<ops::EpsilonInsensitiveLoss>,
                         ops::EpsilonInsensitiveLoss{epsilon}, {x0, x1});
}

VariablePtr binary_cross_entropy(const VariablePtr& x, const VariablePtr& t) {
  return apply_function1(decl::binary<ops::BinaryCrossEntropy>,
                         ops::BinaryCrossEntropy{}, {x, t});
}

VariablePtr top_n_error(const VariablePtr& x, const VariablePtr& t, int axis,
                        int n) {
  return apply_function1(decl::TopNError, TopNErrorOptions{axis, n}, {x, t});
}

VariablePtr categorical_cross_entropy(const VariablePtr& x,
                                      const VariablePtr& t, int axis) {
  return apply_function1(decl::CategoricalCrossEntropy,
                         SoftmaxCrossEntropyOptions{axis}, {x, t});
}

VariablePtr kl_multinomial(const VariablePtr& p, const VariablePtr& q,
                           int base_axis) {
  return apply_function1(decl::KLMultinomial, KLMultinomialOptions{base_axis},
                         {p, q});
}

VariablePtr confusion_matrix(const VariablePtr& x, const VariablePtr& t,
                             int axis) {
  return apply_function1(decl::ConfusionMatrix, ConfusionMatrixOptions{axis},
                         {x, t});
}

}  // namespace functions

}  // namespace mg
