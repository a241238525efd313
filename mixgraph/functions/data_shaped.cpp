// The functions whose output shape comes from their inputs' data: the shape
// rules and the index plans (type-independent: masks, lengths and boxes are
// read as numbers), the builders. The CPU kernels move the elements.
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/data_shaped.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace mg {

namespace {

// v's data as float: exact for fp32, fp16 and bf16, and for the integers
// and 0/1 masks these functions read it for.
const float* floats(Variable* v) { return v->data()->get<const float>(); }

// v's data as double: exact for every type mixgraph stores, int32 included.
const double* doubles(Variable* v) { return v->data()->get<const double>(); }

// Integer data (lengths, batch sizes) as int32, checked to be whole numbers.
std::vector<int32_t> whole_numbers(Variable* v, const std::string& tag,
                                   const char* what) {
  const double* d = doubles(v);
  std::vector<int32_t> r(static_cast<size_t>(v->size()));
  for (size_t i = 0; i < r.size(); ++i) {
    if (d[i] != std::floor(d[i]) || d[i] < 0 || d[i] > 2147483647.0) {
      throw std::invalid_argument(
          msg(tag, what, "[", i, "] is ", d[i], ", not a count"));
    }
    r[i] = static_cast<int32_t>(d[i]);
  }
  return r;
}

// Setup plans on the data at hand. Data that is not there yet (a graph
// read from YAML before its inputs are filled) or not valid gives the
// provisional empty shape `empty` makes: the forward plans again on the
// data it runs on and says what is wrong with it.
template <class Plan, class Empty>
void plan_or_defer(const Plan& plan, const Empty& empty) {
  try {
    plan();
  } catch (const std::invalid_argument&) {
    empty();
  }
}

}  // namespace

// --- BoolGather ---

void BoolGather::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const Shape& m = in[1]->shape();
  bool ok = m.size() <= x.size();
  for (size_t i = 0; ok && i < m.size(); ++i) ok = m[i] == x[i];
  if (!ok) {
    throw std::invalid_argument(
        msg(tag(), "mask with shape ", shape_str(m),
            " must be the leading axes of input with shape ", shape_str(x)));
  }
  row_ = shape_size(x, static_cast<int>(m.size()), static_cast<int>(x.size()));
  find_rows(in, out);
}

void BoolGather::find_rows(const Variables& in, const Variables& out) {
  const float* m = floats(in[1]);
  rows_.clear();
  for (int64_t i = 0; i < in[1]->size(); ++i) {
    if (m[i] != 0.0f) rows_.push_back(i);
  }
  const Shape& x = in[0]->shape();
  Shape y{static_cast<int64_t>(rows_.size())};
  y.insert(y.end(), x.begin() + static_cast<int64_t>(in[1]->shape().size()),
           x.end());
  out[0]->reshape(y);
}

// --- NonZero ---

void NonZero::setup_impl(const Variables& in, const Variables& out) {
  compute(in, out);
}

void NonZero::compute(const Variables& in, const Variables& out) {
  const Shape& s = in[0]->shape();
  const float* x = floats(in[0]);
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < in[0]->size(); ++i) {
    if (x[i] != 0.0f) hits.push_back(i);
  }
  const int64_t nd = static_cast<int64_t>(s.size());
  const int64_t nnz = static_cast<int64_t>(hits.size());
  out[0]->reshape({nd, nnz});
  if (nnz == 0 || nd == 0) return;
  int32_t* y = out[0]->data()->cast<int32_t>(/*write_only=*/true);
  const std::vector<int64_t> strides = shape_strides(s);
  for (int64_t k = 0; k < nnz; ++k) {
    for (int64_t a = 0; a < nd; ++a) {
      y[a * nnz + k] = static_cast<int32_t>(hits[k] / strides[a] % s[a]);
    }
  }
}

// --- Unique ---

void Unique::setup_impl(const Variables& in, const Variables& out) {
  const int nd = static_cast<int>(in[0]->shape().size());
  if (!opts_.flatten) {
    if (nd == 0) {
      throw std::invalid_argument(
          msg(tag(),
              "x is a scalar: it has no axis to take slices along; "
              "use flatten = true"));
    }
    normalize_axis(opts_.axis, nd, tag());
  }
  compute(in, out);
}

void Unique::compute(const Variables& in, const Variables& out) {
  // x as rows to compare: (n, 1) flattened, else (x.shape[axis], the rest)
  // with each row one slice along axis.
  const Shape& s = in[0]->shape();
  const int nd = static_cast<int>(s.size());
  const int axis = opts_.flatten ? 0 : normalize_axis(opts_.axis, nd, tag());
  const int64_t outer = opts_.flatten ? 1 : shape_size(s, 0, axis);
  const int64_t n = opts_.flatten ? in[0]->size() : s[axis];
  const int64_t inner = opts_.flatten ? 1 : shape_size(s, axis + 1, nd);
  const double* x = doubles(in[0]);
  auto at = [&](int64_t row, int64_t k) {  // element k of slice `row`
    return x[(k / inner * n + row) * inner + k % inner];
  };
  const int64_t cols = outer * inner;
  auto less = [&](int64_t a, int64_t b) {
    for (int64_t k = 0; k < cols; ++k) {
      if (at(a, k) != at(b, k)) return at(a, k) < at(b, k);
    }
    return false;
  };
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), less);
  // first[u]: where unique slice u (in sorted order) first occurs; inverse
  // and counts by sorted position.
  std::vector<int64_t> first, counts, inverse(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (i == 0 || less(order[i - 1], order[i])) {
      first.push_back(order[i]);
      counts.push_back(0);
    }
    inverse[order[i]] = static_cast<int64_t>(first.size()) - 1;
    ++counts.back();
  }
  const int64_t u = static_cast<int64_t>(first.size());
  // The output order: sorted, or by first occurrence.
  std::vector<int64_t> pick(static_cast<size_t>(u));
  std::iota(pick.begin(), pick.end(), 0);
  if (!opts_.sorted) {
    std::sort(pick.begin(), pick.end(),
              [&](int64_t a, int64_t b) { return first[a] < first[b]; });
  }
  std::vector<int64_t> place(static_cast<size_t>(u));  // sorted -> output
  for (int64_t i = 0; i < u; ++i) place[pick[i]] = i;

  Shape ys = s;
  if (opts_.flatten) {
    ys = {u};
  } else {
    ys[axis] = u;
  }
  out[0]->reshape(ys);
  source_.assign(static_cast<size_t>(u), 0);
  for (int64_t i = 0; i < u; ++i) source_[i] = first[pick[i]];
  int o = 1;
  auto write = [&](int64_t size, auto value) {
    out[o]->reshape({size});
    if (size > 0) {
      int32_t* d = out[o]->data()->cast<int32_t>(/*write_only=*/true);
      for (int64_t i = 0; i < size; ++i) d[i] = static_cast<int32_t>(value(i));
    }
    ++o;
  };
  if (opts_.with_index) write(u, [&](int64_t i) { return source_[i]; });
  if (opts_.with_inverse)
    write(n, [&](int64_t i) { return place[inverse[i]]; });
  if (opts_.with_counts) write(u, [&](int64_t i) { return counts[pick[i]]; });
  axis_ = axis;
}

// --- PackPaddedSequence ---

void PackPaddedSequence::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const Shape& l = in[1]->shape();
  if (x.size() < 2) {
    throw std::invalid_argument(
        msg(tag(), "padded_sequence with shape ", shape_str(x),
            " needs a time and a batch axis: ",
            opts_.batch_first ? "(B, T, *)" : "(T, B, *)"));
  }
  const int64_t b = x[opts_.batch_first ? 0 : 1];
  if (l.size() != 1 || l[0] != b) {
    throw std::invalid_argument(
        msg(tag(), "lengths with shape ", shape_str(l), " must be (", b,
            ",): one length per sequence of padded_sequence with shape ",
            shape_str(x)));
  }
  row_ = shape_size(x, 2, static_cast<int>(x.size()));
  plan_or_defer([&] { plan(in, out); },
                [&] {
                  Shape ps{0};
                  ps.insert(ps.end(), x.begin() + 2, x.end());
                  out[0]->reshape(ps);
                  out[1]->reshape({0});
                });
}

void PackPaddedSequence::plan(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const int64_t t = x[opts_.batch_first ? 1 : 0];
  lengths_ = whole_numbers(in[1], tag(), "lengths");
  int64_t total = 0;
  for (size_t i = 0; i < lengths_.size(); ++i) {
    if (lengths_[i] > t || (i > 0 && lengths_[i] > lengths_[i - 1])) {
      throw std::invalid_argument(msg(
          tag(), "lengths[", i, "] is ", lengths_[i],
          lengths_[i] > t
              ? msg(", longer than padded_sequence's ", t, " steps")
              : msg(", longer than lengths[", i - 1, "] = ", lengths_[i - 1],
                    ": sort the batch by decreasing length first")));
    }
    total += lengths_[i];
  }
  const int32_t steps = lengths_.empty() ? 0 : lengths_[0];
  batch_sizes_.assign(static_cast<size_t>(steps), 0);
  for (int32_t len : lengths_) {
    for (int32_t s = 0; s < len; ++s) ++batch_sizes_[s];
  }
  Shape ps{total};
  ps.insert(ps.end(), x.begin() + 2, x.end());
  out[0]->reshape(ps);
  out[1]->reshape({steps});
  if (steps > 0) {
    int32_t* bs = out[1]->data()->cast<int32_t>(/*write_only=*/true);
    std::copy(batch_sizes_.begin(), batch_sizes_.end(), bs);
  }
}

// --- PadPackedSequence ---

void PadPackedSequence::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const Shape& b = in[1]->shape();
  if (x.empty()) {
    throw std::invalid_argument(msg(tag(),
                                    "packed_sequence is a scalar; it "
                                    "must be (N, *), one row a step"));
  }
  if (b.size() != 1) {
    throw std::invalid_argument(
        msg(tag(), "batch_sizes with shape ", shape_str(b), " must be 1-D"));
  }
  if (opts_.total_length < -1) {
    throw std::invalid_argument(msg(tag(), "total_length is ",
                                    opts_.total_length,
                                    "; it must be -1 (the longest) or >= 0"));
  }
  row_ = shape_size(x, 1, static_cast<int>(x.size()));
  plan_or_defer([&] { plan(in, out); },
                [&] {
                  Shape ps{0, 0};
                  ps.insert(ps.end(), x.begin() + 1, x.end());
                  out[0]->reshape(ps);
                  out[1]->reshape({0});
                });
}

void PadPackedSequence::plan(const Variables& in, const Variables& out) {
  batch_sizes_ = whole_numbers(in[1], tag(), "batch_sizes");
  const int64_t t = static_cast<int64_t>(batch_sizes_.size());
  int64_t total = 0;
  for (size_t i = 0; i < batch_sizes_.size(); ++i) {
    if (i > 0 && batch_sizes_[i] > batch_sizes_[i - 1]) {
      throw std::invalid_argument(
          msg(tag(), "batch_sizes[", i, "] is ", batch_sizes_[i],
              ", more than batch_sizes[", i - 1, "] = ", batch_sizes_[i - 1],
              ": they must not increase (as pack_padded_sequence makes them)"));
    }
    total += batch_sizes_[i];
  }
  const Shape& x = in[0]->shape();
  if (total != x[0]) {
    throw std::invalid_argument(msg(tag(), "batch_sizes sum to ", total,
                                    ", but packed_sequence with "
                                    "shape ",
                                    shape_str(x), " has ", x[0],
                                    " rows; they must match"));
  }
  if (opts_.total_length >= 0 && opts_.total_length < t) {
    throw std::invalid_argument(msg(tag(), "total_length is ",
                                    opts_.total_length, ", shorter than the ",
                                    t, " steps of the longest sequence"));
  }
  steps_ = opts_.total_length >= 0 ? opts_.total_length : t;
  const int64_t b = t > 0 ? batch_sizes_[0] : 0;
  Shape ps = opts_.batch_first ? Shape{b, steps_} : Shape{steps_, b};
  ps.insert(ps.end(), x.begin() + 1, x.end());
  out[0]->reshape(ps);
  out[1]->reshape({b});
  if (b > 0) {
    int32_t* len = out[1]->data()->cast<int32_t>(/*write_only=*/true);
    for (int64_t i = 0; i < b; ++i) {
      int32_t n = 0;
      while (n < t && batch_sizes_[n] > i) ++n;
      len[i] = n;
    }
  }
}

// --- ONNXNonMaxSuppression ---

void ONNXNonMaxSuppression::setup_impl(const Variables& in,
                                       const Variables& out) {
  const Shape& b = in[0]->shape();
  const Shape& s = in[1]->shape();
  if (b.size() != 3 || b[2] != 4) {
    throw std::invalid_argument(
        msg(tag(), "boxes with shape ", shape_str(b), " must be (B, N, 4)"));
  }
  if (s.size() != 3 || s[0] != b[0] || s[2] != b[1]) {
    throw std::invalid_argument(msg(tag(), "scores with shape ", shape_str(s),
                                    " must be (", b[0], ", C, ", b[1],
                                    ") for boxes with shape ", shape_str(b)));
  }
  if (opts_.center_point_box != 0 && opts_.center_point_box != 1) {
    throw std::invalid_argument(msg(tag(), "center_point_box is ",
                                    opts_.center_point_box,
                                    "; it must be 0 (corners) or 1 (center "
                                    "and size)"));
  }
  if (opts_.max_output_boxes_per_class < 0) {
    throw std::invalid_argument(msg(tag(), "max_output_boxes_per_class is ",
                                    opts_.max_output_boxes_per_class,
                                    "; it must be >= 0"));
  }
  compute(in, out);
}

namespace {

// IoU of two boxes in ONNX's formats, in double.
double iou(const float* a, const float* b, int center_point_box) {
  double ay0, ay1, ax0, ax1, by0, by1, bx0, bx1;
  if (center_point_box == 0) {
    std::tie(ay0, ay1) = std::minmax<double>(a[0], a[2]);
    std::tie(ax0, ax1) = std::minmax<double>(a[1], a[3]);
    std::tie(by0, by1) = std::minmax<double>(b[0], b[2]);
    std::tie(bx0, bx1) = std::minmax<double>(b[1], b[3]);
  } else {
    ax0 = a[0] - a[2] / 2.0, ax1 = a[0] + a[2] / 2.0;
    ay0 = a[1] - a[3] / 2.0, ay1 = a[1] + a[3] / 2.0;
    bx0 = b[0] - b[2] / 2.0, bx1 = b[0] + b[2] / 2.0;
    by0 = b[1] - b[3] / 2.0, by1 = b[1] + b[3] / 2.0;
  }
  const double wi = std::min(ax1, bx1) - std::max(ax0, bx0);
  const double hi = std::min(ay1, by1) - std::max(ay0, by0);
  if (wi <= 0 || hi <= 0) return 0.0;
  const double inter = wi * hi;
  return inter /
         ((ax1 - ax0) * (ay1 - ay0) + (bx1 - bx0) * (by1 - by0) - inter);
}

}  // namespace

void ONNXNonMaxSuppression::compute(const Variables& in, const Variables& out) {
  const Shape& bs = in[0]->shape();
  const int64_t batch = bs[0], n = bs[1], classes = in[1]->shape()[1];
  const float* boxes = floats(in[0]);
  const float* scores = floats(in[1]);
  std::vector<int32_t> picked;  // (batch, class, box) triples
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::vector<char> kept(static_cast<size_t>(n));
  const int64_t limit = opts_.max_output_boxes_per_class;
  for (int64_t b = 0; b < batch && limit > 0; ++b) {
    for (int64_t c = 0; c < classes; ++c) {
      const float* sc = scores + (b * classes + c) * n;
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t i, int64_t j) { return sc[i] > sc[j]; });
      for (int64_t i = 0; i < n; ++i) {
        kept[i] = sc[i] >= opts_.score_threshold;
      }
      int64_t count = 0;
      for (int64_t i = 0; i < n && count < limit; ++i) {
        const int64_t box = order[i];
        if (!kept[box]) continue;
        picked.insert(picked.end(),
                      {static_cast<int32_t>(b), static_cast<int32_t>(c),
                       static_cast<int32_t>(box)});
        ++count;
        const float* p = boxes + (b * n + box) * 4;
        for (int64_t j = i + 1; j < n; ++j) {
          const int64_t other = order[j];
          if (kept[other] &&
              iou(p, boxes + (b * n + other) * 4, opts_.center_point_box) >
                  opts_.iou_threshold) {
            kept[other] = 0;
          }
        }
      }
    }
  }
  const int64_t m = static_cast<int64_t>(picked.size() / 3);
  out[0]->reshape({m, 3});
  if (m == 0) return;
  int32_t* y = out[0]->data()->cast<int32_t>(/*write_only=*/true);
  std::copy(picked.begin(), picked.end(), y);
}

namespace functions {

VariablePtr bool_gather(const VariablePtr& input, const VariablePtr& mask) {
  return apply_function1(decl::BoolGather, BoolGatherOptions{}, {input, mask});
}

VariablePtr nonzero(const VariablePtr& x) {
  return apply_function1(decl::NonZero, NonZeroOptions{}, {x});
}

std::vector<VariablePtr> unique(const VariablePtr& x,
                                const UniqueOptions& opts) {
  return apply_function(decl::Unique, opts, {x});
}

std::vector<VariablePtr> pack_padded_sequence(const VariablePtr& padded,
                                              const VariablePtr& lengths,
                                              bool batch_first) {
  return apply_function(decl::PackPaddedSequence,
                        PackPaddedSequenceOptions{batch_first},
                        {padded, lengths});
}

std::vector<VariablePtr> pad_packed_sequence(const VariablePtr& packed,
                                             const VariablePtr& batch_sizes,
                                             bool batch_first,
                                             float padding_value,
                                             int total_length) {
  return apply_function(
      decl::PadPackedSequence,
      PadPackedSequenceOptions{batch_first, padding_value, total_length},
      {packed, batch_sizes});
}

VariablePtr onnx_non_max_suppression(const VariablePtr& boxes,
                                     const VariablePtr& scores,
                                     const ONNXNonMaxSuppressionOptions& opts) {
  return apply_function1(decl::ONNXNonMaxSuppression, opts, {boxes, scores});
}

}  // namespace functions

}  // namespace mg
