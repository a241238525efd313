// load_onnx on models written here with the ONNX project's protobuf
// classes: shape arithmetic folded while loading (exactly, for int64 beyond
// what fp32 holds), ONNX's broadcasting of Where and the binary operators,
// ConstantOfShape, Range, HardSwish, a reverse LSTM, and the recurrent
// operators' errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <mixgraph/mixgraph.hpp>
#include <mixgraph/utils/onnx.hpp>

#ifdef MIXGRAPH_WITH_ONNX
#include <onnx/onnx_pb.h>
#endif

namespace F = mg::functions;

namespace {

#ifdef MIXGRAPH_WITH_ONNX

// A model being written: inputs, initializers, nodes, outputs.
struct Model {
  onnx::ModelProto m;
  onnx::GraphProto* g = m.mutable_graph();

  Model() {
    m.set_ir_version(onnx::IR_VERSION);
    m.add_opset_import()->set_version(17);
    g->set_name("ops");
  }
  // An input; -1 is the free batch dimension "N".
  void input(const std::string& name, const mg::Shape& shape,
             int elem = onnx::TensorProto::FLOAT) {
    auto* v = g->add_input();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem);
    for (int64_t d : shape) {
      auto* dim = t->mutable_shape()->add_dim();
      if (d < 0) {
        dim->set_dim_param("N");
      } else {
        dim->set_dim_value(d);
      }
    }
  }
  void output(const std::string& name) {
    auto* o = g->add_output();
    o->set_name(name);
    auto* t = o->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape();  // the checker wants one; its dims are left out
  }
  void ints(const std::string& name, const std::vector<int64_t>& v,
            const mg::Shape& shape) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : shape) t->add_dims(d);
    for (int64_t x : v) t->add_int64_data(x);
  }
  void floats(const std::string& name, const std::vector<float>& v,
              const mg::Shape& shape) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : shape) t->add_dims(d);
    for (float x : v) t->add_float_data(x);
  }
  onnx::NodeProto* node(const std::string& op,
                        const std::vector<std::string>& in,
                        const std::vector<std::string>& out) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name("/" + op + "_" + std::to_string(g->node_size()));
    for (const auto& s : in) n->add_input(s);
    for (const auto& s : out) n->add_output(s);
    return n;
  }
  mg::Network load(mg::ParameterScope& params, int64_t batch = 2) const {
    mg::NetworkOptions o;
    o.batch_size = batch;
    return mg::network_from_onnx(m.SerializeAsString(), params, "<test>", o);
  }
};

void attr(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name), a->set_type(onnx::AttributeProto::INT), a->set_i(v);
}
void attr(onnx::NodeProto* n, const std::string& name,
          const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name), a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void attr(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name), a->set_type(onnx::AttributeProto::STRING), a->set_s(v);
}

std::vector<float> ramp(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[i] = 0.25f * static_cast<float>(i * 7 % 11) - 1;
  return v;
}

void fill(const mg::VariablePtr& v, const std::vector<float>& data) {
  std::copy(data.begin(), data.end(), v->data()->cast<float>());
}

std::vector<float> values(const mg::VariablePtr& v) {
  v->forward();
  const float* p = v->data()->get<const float>();
  return std::vector<float>(p, p + v->size());
}

// The message of the std::invalid_argument `fn` throws ("" if none).
template <class Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// Shape arithmetic through int64 values fp32 cannot hold: (N + 2^40 + 1) -
// (2^40 + 1), times 2^33 then divided by it, (that + 7) mod 7, Abs(Neg()),
// a Sum of three and a Min against INT64_MAX: folded exactly, the Reshape
// gets (N, 12).
TEST(OnnxImportOps, FoldsIntegerShapeArithmeticExactly) {
  Model m;
  m.input("x", {-1, 3, 4});
  const int64_t big = (int64_t{1} << 40) + 1;
  m.ints("big", {big}, {});
  m.ints("scale", {int64_t{1} << 33}, {});
  m.ints("max", {std::numeric_limits<int64_t>::max()}, {1});
  m.ints("zero", {0}, {});
  m.ints("axes", {0}, {1});
  m.ints("rest", {-1}, {1});
  m.node("Shape", {"x"}, {"s"});
  m.node("Gather", {"s", "zero"}, {"n"});
  m.node("Add", {"n", "big"}, {"n1"});
  m.node("Sub", {"n1", "big"}, {"n2"});
  m.node("Mul", {"n2", "scale"}, {"n3"});
  m.node("Div", {"n3", "scale"}, {"n4a"});
  m.ints("seven", {7}, {});
  m.node("Add", {"n4a", "seven"}, {"n4b"});  // (N + 7) mod 7 = N for N < 7
  m.node("Mod", {"n4b", "seven"}, {"n4c"});
  m.node("Neg", {"n4c"}, {"n4d"});
  m.node("Abs", {"n4d"}, {"n4e"});
  m.node("Sum", {"n4e", "zero", "zero"}, {"n4"});
  m.node("Unsqueeze", {"n4", "axes"}, {"n5"});
  m.node("Min", {"n5", "max"}, {"n6"});
  m.node("Concat", {"n6", "rest"}, {"shape"});
  attr(m.g->mutable_node(m.g->node_size() - 1), "axis", 0);
  m.node("Reshape", {"x", "shape"}, {"y"});
  m.output("y");
  mg::ParameterScope params;
  for (int64_t batch : {2, 5}) {
    mg::Network net = m.load(params, batch);
    EXPECT_EQ(net.output("y")->shape(), (mg::Shape{batch, 12}));
  }
}

// Shape -> Cast to float -> Sqrt -> Reciprocal (an attention scale): folded
// by running our own functions, then a scalar operand; and a Concat of float
// constants of rank 2 along axis 1.
TEST(OnnxImportOps, FoldsFloatArithmeticWithOurFunctions) {
  Model m;
  m.input("x", {-1, 4});
  m.ints("last", {1}, {});
  m.node("Shape", {"x"}, {"s"});
  m.node("Gather", {"s", "last"}, {"d"});
  attr(m.node("Cast", {"d"}, {"df"}), "to", int64_t{onnx::TensorProto::FLOAT});
  m.node("Sqrt", {"df"}, {"r"});
  m.node("Reciprocal", {"r"}, {"scale"});
  m.node("Mul", {"x", "scale"}, {"h"});
  // Constants of rank 2 and type float joined along axis 1: (1, 2) and
  // (1, 2) make the (1, 4) row [0.5, 1.5, 2.5, 3.5] added to every row.
  m.floats("c0", {0.5f, 1.5f}, {1, 2});
  m.floats("c1", {2.5f, 3.5f}, {1, 2});
  m.node("Identity", {"c0"}, {"k0"});
  m.node("Identity", {"c1"}, {"k1"});
  attr(m.node("Concat", {"k0", "k1"}, {"row"}), "axis", 1);
  m.node("Add", {"h", "row"}, {"y"});
  m.output("y");
  mg::ParameterScope params;
  mg::Network net = m.load(params);
  fill(net.input("x"), ramp(8));
  const std::vector<float> y = values(net.output("y")), x = ramp(8);
  for (size_t i = 0; i < y.size(); ++i)
    EXPECT_FLOAT_EQ(y[i], x[i] * 0.5f + (0.5f + (i % 4)));
}

// Where broadcasts all three inputs (a scalar 0 beside a tensor, a mask of
// shape (N, 1, 5)), and the binary operators both of theirs.
TEST(OnnxImportOps, WhereAndBinaryOperatorsBroadcast) {
  Model m;
  m.input("x", {-1, 3, 5});
  m.input("mask", {-1, 1, 5}, onnx::TensorProto::BOOL);
  m.input("col", {-1, 3, 1});
  m.floats("zero", {0.0f}, {});
  m.floats("row", {1, 2, 3, 4, 5}, {5});
  m.node("Where", {"mask", "zero", "x"}, {"w"});
  m.node("Add", {"col", "row"}, {"a"});  // (N, 3, 1) + (5,)
  m.node("Mul", {"w", "a"}, {"y"});
  m.output("y");
  mg::ParameterScope params;
  mg::Network net = m.load(params);
  const std::vector<float> x = ramp(30), col = ramp(6);
  std::vector<float> mask(10);
  for (size_t i = 0; i < mask.size(); ++i) mask[i] = i % 3 == 0;
  fill(net.input("x"), x);
  fill(net.input("mask"), mask);
  fill(net.input("col"), col);
  const std::vector<float> y = values(net.output("y"));
  ASSERT_EQ(net.output("y")->shape(), (mg::Shape{2, 3, 5}));
  for (int n = 0; n < 2; ++n)
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 5; ++c) {
        const int i = (n * 3 + r) * 5 + c;
        const float w = mask[n * 5 + c] ? 0.0f : x[i];
        EXPECT_FLOAT_EQ(y[i], w * (col[n * 3 + r] + (c + 1)));
      }
  // Our own F::where says that broadcasting is what it lacks.
  const std::string e = error_of([] {
    F::where(mg::make_variable({3, 5}), mg::make_variable({}),
             mg::make_variable({3, 5}));
  });
  EXPECT_NE(e.find("does not broadcast"), std::string::npos) << e;
}

// ConstantOfShape (a mask of ones, as zeros_like writes) and Range with
// Equal and Expand: what PyTorch writes for a padding mask, all folded.
TEST(OnnxImportOps, ConstantOfShapeAndRangeFold) {
  Model m;
  m.input("x", {-1, 4});
  m.ints("start", {0}, {});
  m.ints("delta", {1}, {});
  m.ints("one", {1}, {});
  m.node("Shape", {"x"}, {"s"});
  m.node("Gather", {"s", "one"}, {"t"});
  m.node("Range", {"start", "t", "delta"}, {"r"});  // 0 1 2 3
  auto* c = m.node("ConstantOfShape", {"s"}, {"filled"});
  auto* a = c->add_attribute();
  a->set_name("value"), a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  a->mutable_t()->add_dims(1);
  a->mutable_t()->add_int64_data(2);
  m.node("Equal", {"filled", "r"}, {"is2"});  // (N, 4): column 2
  attr(m.node("Cast", {"is2"}, {"f"}), "to", int64_t{onnx::TensorProto::FLOAT});
  m.node("Add", {"x", "f"}, {"y"});
  m.output("y");
  mg::ParameterScope params;
  mg::Network net = m.load(params, 3);
  fill(net.input("x"), ramp(12));
  const std::vector<float> y = values(net.output("y")), x = ramp(12);
  for (size_t i = 0; i < y.size(); ++i)
    EXPECT_FLOAT_EQ(y[i], x[i] + (i % 4 == 2 ? 1.0f : 0.0f));
}

// Mod at run time: fmod 1 is our Mod2; fmod 0 (Python's sign rule) is
// refused, since Mod2 computes floating data as fmod.
TEST(OnnxImportOps, ModAtRunTimeNeedsFmod) {
  for (int64_t fmod : {1, 0}) {
    Model m;
    m.input("x", {2, 3});
    m.floats("d", {-0.75f}, {});
    attr(m.node("Mod", {"x", "d"}, {"y"}), "fmod", fmod);
    m.output("y");
    mg::ParameterScope params;
    if (fmod) {
      mg::Network net = m.load(params);
      fill(net.input("x"), ramp(6));
      const std::vector<float> y = values(net.output("y")), x = ramp(6);
      for (size_t i = 0; i < y.size(); ++i)
        EXPECT_FLOAT_EQ(y[i], std::fmod(x[i], -0.75f));
      continue;
    }
    const std::string e = error_of([&] { m.load(params); });
    EXPECT_NE(e.find("(Mod): fmod 0 on data computed at run time"),
              std::string::npos)
        << e;
  }
}

// Gather with constant indices counts negative ones from the end, as ONNX
// (y[:, -1] in PyTorch), and names an index out of range.
TEST(OnnxImportOps, GatherReadsNegativeIndices) {
  for (int64_t index : {-1, 3}) {
    Model m;
    m.input("x", {-1, 3, 2});
    m.ints("i", {index}, {});
    attr(m.node("Gather", {"x", "i"}, {"y"}), "axis", 1);
    m.output("y");
    mg::ParameterScope params;
    if (index < 0) {
      mg::Network net = m.load(params);
      fill(net.input("x"), ramp(12));
      const std::vector<float> y = values(net.output("y")), x = ramp(12);
      ASSERT_EQ(net.output("y")->shape(), (mg::Shape{2, 2}));
      for (int n = 0; n < 2; ++n)
        for (int k = 0; k < 2; ++k)
          EXPECT_EQ(y[n * 2 + k], x[(n * 3 + 2) * 2 + k]);
      continue;
    }
    const std::string e = error_of([&] { m.load(params); });
    EXPECT_NE(e.find("(Gather): index 3 is out of range for axis 1 of size 3"),
              std::string::npos)
        << e;
  }
}

TEST(OnnxImportOps, HardSwish) {
  Model m;
  m.input("x", {2, 6});
  m.node("HardSwish", {"x"}, {"y"});
  m.output("y");
  mg::ParameterScope params;
  mg::Network net = m.load(params);
  std::vector<float> x(12);
  for (size_t i = 0; i < x.size(); ++i) x[i] = -4.5f + 0.75f * i;
  fill(net.input("x"), x);
  const std::vector<float> y = values(net.output("y"));
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = x[i] * std::min(std::max(x[i] + 3, 0.0f), 6.0f) / 6;
    EXPECT_NEAR(y[i], want, 1e-6) << x[i];
  }
}

// MaxPool with ceil_mode 1 (SqueezeNet's, GoogLeNet's): the last window
// runs past the input's end and takes the max of what it covers; an
// AveragePool that would need the same is refused, saying so.
TEST(OnnxImportOps, MaxPoolCeilModeCoversTheEnd) {
  Model m;
  m.input("x", {1, 1, 6, 7});
  auto* n = m.node("MaxPool", {"x"}, {"y"});
  attr(n, "kernel_shape", std::vector<int64_t>{3, 3});
  attr(n, "strides", std::vector<int64_t>{2, 2});
  attr(n, "ceil_mode", 1);
  m.output("y");
  mg::ParameterScope params;
  mg::Network net = m.load(params);
  const std::vector<float> x = ramp(42);
  fill(net.input("x"), x);
  const std::vector<float> y = values(net.output("y"));
  ASSERT_EQ(net.output("y")->shape(), (mg::Shape{1, 1, 3, 3}));
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      float want = -1e30f;
      for (int r = 2 * i; r < std::min(2 * i + 3, 6); ++r) {
        for (int c = 2 * j; c < std::min(2 * j + 3, 7); ++c) {
          want = std::max(want, x[r * 7 + c]);
        }
      }
      EXPECT_EQ(y[i * 3 + j], want) << i << ", " << j;
    }
  }
  n->set_op_type("AveragePool");
  mg::ParameterScope p2;
  EXPECT_NE(error_of([&] { m.load(p2); }).find("ceil_mode 1 of an AveragePool"),
            std::string::npos);
}

// ScatterND: data (3, 4) with rows 2 and 0 replaced (index tuples on the
// last axis of indices, ONNX's layout), then with reduction add.
TEST(OnnxImportOps, ScatterNDWritesRowsAtIndexTuples) {
  for (const std::string reduction : {"none", "add"}) {
    SCOPED_TRACE(reduction);
    Model m;
    m.input("x", {3, 4});
    m.ints("idx", {2, 0}, {2, 1});
    m.floats("up", {1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});
    auto* n = m.node("ScatterND", {"x", "idx", "up"}, {"y"});
    attr(n, "reduction", reduction);
    m.output("y");
    mg::ParameterScope params;
    mg::Network net = m.load(params);
    const std::vector<float> x = ramp(12);
    fill(net.input("x"), x);
    const std::vector<float> y = values(net.output("y"));
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 4; ++j) {
        // Row 2 gets updates row 0, row 0 updates row 1.
        const float u = i == 2 ? 1.0f + j : i == 0 ? 5.0f + j : 0.0f;
        const float want =
            i == 1 ? x[4 + j] : (reduction == "add" ? x[i * 4 + j] + u : u);
        EXPECT_EQ(y[i * 4 + j], want) << i << ", " << j;
      }
    }
  }
}

// An LSTM node (hidden 2, input 3) with an attribute or input changed.
Model lstm_model(const std::string& attr_name, int64_t value,
                 bool short_lengths = false) {
  Model m;
  m.input("x", {4, 2, 3});
  m.floats("W", std::vector<float>(24, 0.1f), {1, 8, 3});
  m.floats("R", std::vector<float>(16, 0.1f), {1, 8, 2});
  m.ints("lens", {4, short_lengths ? 3 : 4}, {2});
  auto* n = m.node("LSTM", {"x", "W", "R", "", "lens"}, {"y"});
  attr(n, "hidden_size", 2);
  if (!attr_name.empty()) attr(n, attr_name, value);
  m.output("y");
  return m;
}

TEST(OnnxImportOps, RecurrentOperatorsSayWhatTheyDoNotRead) {
  mg::ParameterScope params;
  // Full-length sequence_lens change nothing and are read; W and R become
  // one parameter named after the node (without its leading '/').
  EXPECT_EQ(lstm_model("", 0).load(params).output("y")->shape(),
            (mg::Shape{4, 1, 2, 2}));
  ASSERT_TRUE(params.get("LSTM_1/weight_l0"));
  EXPECT_EQ(params.get("LSTM_1/weight_l0")->shape(), (mg::Shape{1, 4, 2, 5}));
  EXPECT_FALSE(params.get("W"));
  std::string e = error_of([&] { lstm_model("", 0, true).load(params); });
  EXPECT_NE(e.find("node '/LSTM_1' (LSTM): sequence_lens with a length 3"),
            std::string::npos)
      << e;
  e = error_of([&] { lstm_model("layout", 1).load(params); });
  EXPECT_NE(e.find("(LSTM): layout 1 (batch first) is not supported"),
            std::string::npos)
      << e;
  e = error_of([&] { lstm_model("input_forget", 1).load(params); });
  EXPECT_NE(e.find("input_forget = 1 is not supported"), std::string::npos)
      << e;
  Model gru;
  gru.input("x", {4, 2, 3});
  gru.floats("W", std::vector<float>(18, 0.1f), {1, 6, 3});
  gru.floats("R", std::vector<float>(12, 0.1f), {1, 6, 2});
  attr(gru.node("GRU", {"x", "W", "R"}, {"y"}), "hidden_size", 2);
  gru.output("y");
  e = error_of([&] { gru.load(params); });
  EXPECT_NE(e.find("(GRU): linear_before_reset 0 is not supported"),
            std::string::npos)
      << e;
}

// direction "reverse" is the forward direction on the reversed sequence,
// its outputs put back in order (the same weights; the last h alike).
TEST(OnnxImportOps, ReverseRecurrenceIsForwardOnTheReversedSequence) {
  Model m;
  m.input("x", {4, 2, 3});
  m.input("x_rev", {4, 2, 3});
  std::vector<float> w = ramp(24), r = ramp(16), b = ramp(16);
  for (float& v : r) v *= 0.5f;
  m.floats("W", w, {1, 8, 3});
  m.floats("R", r, {1, 8, 2});
  m.floats("B", b, {1, 16});
  for (const char* dir : {"reverse", "forward"}) {
    const std::string d = dir, in = d == "reverse" ? "x" : "x_rev";
    auto* n = m.node("LSTM", {in, "W", "R", "B"}, {"y_" + d, "h_" + d});
    attr(n, "hidden_size", 2);
    auto* a = n->add_attribute();
    a->set_name("direction"), a->set_type(onnx::AttributeProto::STRING);
    a->set_s(d);
    m.output("y_" + d);
    m.output("h_" + d);
  }
  mg::ParameterScope params;
  mg::Network net = m.load(params);
  const std::vector<float> x = ramp(24);
  std::vector<float> x_rev(24);
  for (int t = 0; t < 4; ++t)
    std::copy(x.begin() + (3 - t) * 6, x.begin() + (4 - t) * 6,
              x_rev.begin() + t * 6);
  fill(net.input("x"), x);
  fill(net.input("x_rev"), x_rev);
  const std::vector<float> y = values(net.output("y_reverse")),
                           y_fwd = values(net.output("y_forward"));
  ASSERT_EQ(y.size(), 16u);  // (4, 1, 2, 2)
  for (int t = 0; t < 4; ++t)
    for (int k = 0; k < 4; ++k)
      EXPECT_FLOAT_EQ(y[t * 4 + k], y_fwd[(3 - t) * 4 + k]) << t;
  EXPECT_EQ(values(net.output("h_reverse")), values(net.output("h_forward")));
}

#else

TEST(OnnxImportOps, SkippedWithoutOnnx) {
  GTEST_SKIP() << "built without ONNX (MIXGRAPH_ONNX)";
}

#endif

}  // namespace
