// Functions whose output shape is a property of their inputs' data, as
// NNabla's: BoolGather, NonZero, Unique, PackPaddedSequence,
// PadPackedSequence and ONNXNonMaxSuppression. Each says so with
// Function::output_shape_depends_on_data(): setup gives the shapes the
// data at hand gives (zeros before any forward: provisional), forward
// reshapes its outputs to the data it runs on, and the graph sets up the
// functions below again. So, unlike NNabla, where these need a graph
// rebuilt every iteration, a graph with them is built once, read back from
// YAML, and run on new data of any count.
#pragma once

#include <cstdint>
#include <vector>

#include <mixgraph/graph/function.hpp>

namespace mg {

struct BoolGatherOptions {};

namespace decl {
/// BoolGather's declaration: data of any type (integers stay exact), the
/// mask any type (nonzero is true) and without grad.
inline constexpr FunctionDeclOf<BoolGatherOptions> BoolGather{
    {"BoolGather",
     "bool_gather",
     {Port{"input", Port::any}, Port{"mask", Port::any, false}},
     {Port{"output", Port::any}}}};
}  // namespace decl

/// input (B..., D...) and mask (B...): output (nnz, D...) holds input's
/// rows where the mask is nonzero, in order (F::bool_scatter's inverse).
/// dinput is doutput's rows put back, zeros where the mask is zero.
class BoolGather : public Function {
 public:
  explicit BoolGather(const BoolGatherOptions&) {}
  bool grad_depends_input_data(int i) const override { return i == 1; }
  bool output_shape_depends_on_data() const override { return true; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  /// The mask's nonzero positions, read now; reshapes the output to them.
  void find_rows(const Variables& in, const Variables& out);
  std::vector<int64_t> rows_;
  int64_t row_ = 1;  // elements per row: D...
};

struct NonZeroOptions {};

namespace decl {
/// NonZero's declaration: x of any type, the indices int32.
inline constexpr FunctionDeclOf<NonZeroOptions> NonZero{
    {"NonZero",
     "nonzero",
     {Port{"x", Port::any, false}},
     {Port{"y", Port::integer}}}};
}  // namespace decl

/// y (ndim, nnz): the indices of x's nonzero elements in row-major order,
/// one row per axis (ONNX's NonZero). No grad.
class NonZero : public Function {
 public:
  explicit NonZero(const NonZeroOptions&) {}
  bool output_shape_depends_on_data() const override { return true; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  /// Computes the indices from x's data and writes them (reshaping y).
  void compute(const Variables& in, const Variables& out);
};

struct UniqueOptions {
  /// Unique elements of x flattened; else unique slices along `axis`.
  bool flatten = true;
  /// The axis of the slices when flatten is false (negative counts from
  /// the end). NNabla's default is None, which flatten = true stands for.
  int axis = 0;
  /// Ascending order; else in the order of first occurrence.
  bool sorted = true;
  bool with_index = false;
  bool with_inverse = false;
  bool with_counts = false;

  MG_FIELDS(flatten, axis, sorted, with_index, with_inverse, with_counts);
};

namespace decl {
/// Unique's declaration: y keeps x's type; indices, inverse_indices and
/// counts are int32, those asked for, in that order.
inline constexpr FunctionDeclOf<UniqueOptions> Unique{
    {"Unique",
     "unique",
     {Port{"x", Port::any, false}},
     {Port{"y", Port::any}, Port{"indices", Port::integer},
      Port{"inverse_indices", Port::integer}, Port{"counts", Port::integer}}}};
}  // namespace decl

/// y: the unique elements of x (flatten) or unique slices along axis,
/// compared exactly in x's type; indices: where each first occurs in x
/// (flattened, or along axis); inverse_indices: for each element (slice)
/// of x, its position in y; counts: occurrences. No grad (NNabla has none).
class Unique : public FunctionWith<UniqueOptions> {
 public:
  using FunctionWith::FunctionWith;
  int num_outputs() const override {
    return 1 + opts_.with_index + opts_.with_inverse + opts_.with_counts;
  }
  bool output_shape_depends_on_data() const override { return true; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  /// Finds the unique slices of x's data and writes every output.
  void compute(const Variables& in, const Variables& out);
  /// Where each of y's slices comes from along axis_ (flattened: x's
  /// element), for the kernel's copy.
  std::vector<int64_t> source_;
  int axis_ = 0;
};

struct PackPaddedSequenceOptions {
  /// padded_sequence is (B, T, *) instead of (T, B, *).
  bool batch_first = false;

  MG_FIELDS(batch_first);
};

namespace decl {
/// PackPaddedSequence's declaration: lengths and batch_sizes int32.
inline constexpr FunctionDeclOf<PackPaddedSequenceOptions> PackPaddedSequence{
    {"PackPaddedSequence",
     "pack_padded_sequence",
     {Port{"padded_sequence", Port::any},
      Port{"lengths", Port::integer, false}},
     {Port{"pack_sequence", Port::any}, Port{"batch_sizes", Port::integer}}}};
}  // namespace decl

/// padded_sequence (T, B, *) and lengths (B), in decreasing order (as
/// NNabla's: sort the batch first): pack_sequence (sum of lengths, *) holds
/// the steps in time-major order, batch_sizes (max length) how many
/// sequences each step has. The grad goes back to the steps it came from.
class PackPaddedSequence : public FunctionWith<PackPaddedSequenceOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int i) const override { return i == 1; }
  bool output_shape_depends_on_data() const override { return true; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  /// Reads and checks lengths; reshapes the outputs to them.
  void plan(const Variables& in, const Variables& out);
  std::vector<int32_t> lengths_, batch_sizes_;
  int64_t row_ = 1;  // elements per step: *
};

struct PadPackedSequenceOptions {
  /// padded_sequence is (B, T, *) instead of (T, B, *).
  bool batch_first = false;
  /// What fills the steps past each sequence's length.
  float padding_value = 0.0f;
  /// Pad to this many steps; -1: the longest sequence's.
  int total_length = -1;

  MG_FIELDS(batch_first, padding_value, total_length);
};

namespace decl {
/// PadPackedSequence's declaration: batch_sizes and lengths int32.
inline constexpr FunctionDeclOf<PadPackedSequenceOptions> PadPackedSequence{
    {"PadPackedSequence",
     "pad_packed_sequence",
     {Port{"packed_sequence", Port::any},
      Port{"batch_sizes", Port::integer, false}},
     {Port{"padded_sequence", Port::any}, Port{"lengths", Port::integer}}}};
}  // namespace decl

/// PackPaddedSequence's inverse: packed_sequence (N, *) and batch_sizes (T)
/// (non-increasing, summing to N) give padded_sequence (T', B, *) with
/// B = batch_sizes[0], T' = total_length or T, padding_value past each
/// sequence's end, and lengths (B). The grad gathers the steps back.
class PadPackedSequence : public FunctionWith<PadPackedSequenceOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int i) const override { return i == 1; }
  bool output_shape_depends_on_data() const override { return true; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  /// Reads and checks batch_sizes; reshapes the outputs to them.
  void plan(const Variables& in, const Variables& out);
  std::vector<int32_t> batch_sizes_;
  int64_t row_ = 1, steps_ = 0;  // elements per step; padded steps
};

struct ONNXNonMaxSuppressionOptions {
  /// 0: boxes are [y1, x1, y2, x2] (any two opposite corners); 1: [x
  /// center, y center, width, height].
  int center_point_box = 0;
  /// At most this many boxes per batch item and class (0: none).
  int max_output_boxes_per_class = 0;
  /// A box whose IoU with a higher-scored kept box exceeds this is dropped.
  float iou_threshold = 0.0f;
  /// Boxes scoring below this are dropped.
  float score_threshold = 0.0f;

  MG_FIELDS(center_point_box, max_output_boxes_per_class, iou_threshold,
            score_threshold);
};

namespace decl {
/// ONNXNonMaxSuppression's declaration: boxes and scores read in fp32
/// (coordinates and scores need its range and precision), the selected
/// indices int32.
inline constexpr FunctionDeclOf<ONNXNonMaxSuppressionOptions>
    ONNXNonMaxSuppression{{"ONNXNonMaxSuppression",
                           "onnx_non_max_suppression",
                           {Port{"boxes", Port::float32, false},
                            Port{"scores", Port::float32, false}},
                           {Port{"y", Port::integer}}}};
}  // namespace decl

/// boxes (B, N, 4) and scores (B, C, N): y (M, 3) lists the kept boxes as
/// (batch index, class index, box index), per batch item and class in
/// decreasing score (ties: the lower box index first, where NNabla's
/// unstable sort leaves it open). ONNX's NonMaxSuppression with NNabla's
/// threshold (score >= score_threshold kept). No grad.
class ONNXNonMaxSuppression
    : public FunctionWith<ONNXNonMaxSuppressionOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool output_shape_depends_on_data() const override { return true; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  /// Runs the suppression on the data and writes y (reshaping it).
  void compute(const Variables& in, const Variables& out);
};

namespace functions {
/// input's rows where mask is nonzero: (nnz, D...).
VariablePtr bool_gather(const VariablePtr& input, const VariablePtr& mask);
/// The indices of x's nonzeros, (x.ndim, nnz) int32.
VariablePtr nonzero(const VariablePtr& x);
/// The unique elements (or slices along axis) of x, then the index outputs
/// asked for: indices, inverse_indices, counts.
std::vector<VariablePtr> unique(const VariablePtr& x,
                                const UniqueOptions& opts = {});
/// (pack_sequence, batch_sizes) of a padded batch sorted by decreasing
/// length.
std::vector<VariablePtr> pack_padded_sequence(const VariablePtr& padded,
                                              const VariablePtr& lengths,
                                              bool batch_first = false);
/// (padded_sequence, lengths) of a packed batch.
std::vector<VariablePtr> pad_packed_sequence(const VariablePtr& packed,
                                             const VariablePtr& batch_sizes,
                                             bool batch_first = false,
                                             float padding_value = 0.0f,
                                             int total_length = -1);
/// The (batch, class, box) indices of the boxes non-maximum suppression
/// keeps.
VariablePtr onnx_non_max_suppression(
    const VariablePtr& boxes, const VariablePtr& scores,
    const ONNXNonMaxSuppressionOptions& opts = {});
}  // namespace functions

}  // namespace mg
