// load_onnx's Resize: the options Interpolate computes alike become
// Interpolate (what save_onnx writes back), every other opset-17 option
// ONNXResize, whose results the imported network must give bit for bit.
// The models are written here with the ONNX project's protobuf classes.
#include <gtest/gtest.h>

#include <string>
#include <type_traits>
#include <vector>

#include <mixgraph/mixgraph.hpp>
#include <mixgraph/utils/onnx.hpp>

#ifdef MIXGRAPH_WITH_ONNX
#include <onnx/onnx_pb.h>
#endif

namespace F = mg::functions;

namespace {

#ifdef MIXGRAPH_WITH_ONNX

// The attributes of one Resize node and its constant inputs (empty: left
// out, as ONNX writes an absent optional input).
struct ResizeNode {
  std::vector<std::pair<std::string, std::string>> strings;
  std::vector<std::pair<std::string, float>> floats;
  std::vector<std::pair<std::string, int64_t>> ints;
  std::vector<float> roi, scales;
  std::vector<int64_t> sizes;
};

// A 1-D initializer of floats or int64s.
template <class V>
void add_initializer(onnx::GraphProto* g, const std::string& name,
                     const std::vector<V>& v) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->add_dims(static_cast<int64_t>(v.size()));
  if constexpr (std::is_same_v<V, float>) {
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (float f : v) t->add_float_data(f);
  } else {
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t i : v) t->add_int64_data(i);
  }
}

void add_value(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* to,
               const std::string& name, const mg::Shape& shape) {
  auto* v = to->Add();
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  auto* s = t->mutable_shape();
  for (int64_t d : shape) {
    if (d < 0) {
      s->add_dim()->set_dim_param("d" + std::to_string(s->dim_size()));
    } else {
      s->add_dim()->set_dim_value(d);
    }
  }
}

// A model of one Resize from x (of shape `in`) to y, serialized.
std::string resize_model(const mg::Shape& in, const ResizeNode& r) {
  onnx::ModelProto m;
  m.set_ir_version(onnx::IR_VERSION);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("resize");
  add_value(g->mutable_input(), "x", in);
  add_value(g->mutable_output(), "y", {-1, -1, -1, -1});  // left free
  auto* n = g->add_node();
  n->set_op_type("Resize");
  n->add_input("x");
  n->add_input(r.roi.empty() ? "" : "roi");
  n->add_input(r.scales.empty() ? "" : "scales");
  if (!r.sizes.empty()) n->add_input("sizes");
  n->add_output("y");
  if (!r.roi.empty()) add_initializer(g, "roi", r.roi);
  if (!r.scales.empty()) add_initializer(g, "scales", r.scales);
  if (!r.sizes.empty()) add_initializer(g, "sizes", r.sizes);
  for (const auto& [k, v] : r.strings) {
    auto* a = n->add_attribute();
    a->set_name(k), a->set_type(onnx::AttributeProto::STRING), a->set_s(v);
  }
  for (const auto& [k, v] : r.floats) {
    auto* a = n->add_attribute();
    a->set_name(k), a->set_type(onnx::AttributeProto::FLOAT), a->set_f(v);
  }
  for (const auto& [k, v] : r.ints) {
    auto* a = n->add_attribute();
    a->set_name(k), a->set_type(onnx::AttributeProto::INT), a->set_i(v);
  }
  return m.SerializeAsString();
}

std::vector<float> ramp(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[i] = 0.25f * static_cast<float>(i * 7 % 11) - 1;
  return v;
}

// Imports the model, runs it on a ramp, and returns (function name, y).
std::pair<std::string, std::vector<float>> run_imported(const mg::Shape& in,
                                                        const ResizeNode& r) {
  mg::ParameterScope params;
  mg::Network net = mg::network_from_onnx(resize_model(in, r), params);
  auto x = net.input("x");
  const auto xs = ramp(x->size());
  std::copy(xs.begin(), xs.end(), x->data()->cast<float>(true));
  auto y = net.output("y");
  y->forward();
  const float* p = y->data()->get<const float>();
  return {y->parent()->function().name(), {p, p + y->size()}};
}

std::vector<float> run_direct(const mg::Shape& in,
                              const mg::ONNXResizeOptions& o) {
  auto x = mg::make_variable(in);
  const auto xs = ramp(x->size());
  std::copy(xs.begin(), xs.end(), x->data()->cast<float>(true));
  auto y = F::onnx_resize(x, o);
  y->forward();
  const float* p = y->data()->get<const float>();
  return {p, p + y->size()};
}

TEST(OnnxImportResize, OptionsInterpolateLacksRunAsONNXResize) {
  const mg::Shape in{1, 2, 3, 4};
  struct Case {
    const char* what;
    ResizeNode node;
    mg::ONNXResizeOptions direct;
  };
  std::vector<Case> cases;
  {  // cubic, the default coordinates, scales
    Case c{"cubic", {}, {}};
    c.node.strings = {{"mode", "cubic"}};
    c.node.floats = {{"cubic_coeff_a", -0.5f}};
    c.node.ints = {{"exclude_outside", 1}};
    c.node.scales = {1, 1, 2, 1.5f};
    c.direct.mode = "cubic", c.direct.cubic_coeff_a = -0.5f;
    c.direct.exclude_outside = 1, c.direct.scales = {1, 1, 2, 1.5f};
    cases.push_back(c);
  }
  {  // nearest with ONNX's default rounding, sizes
    Case c{"nearest round_prefer_floor", {}, {}};
    c.node.sizes = {1, 2, 5, 7};
    c.direct.sizes = {1, 2, 5, 7};
    c.direct.coordinate_transformation_mode = "half_pixel";
    cases.push_back(c);
  }
  {  // linear, pytorch_half_pixel, a scale whose size is not whole
    Case c{"linear pytorch_half_pixel", {}, {}};
    c.node.strings = {{"mode", "linear"},
                      {"coordinate_transformation_mode", "pytorch_half_pixel"}};
    c.node.scales = {1, 1, 1.5f, 0.5f};
    c.direct.mode = "linear";
    c.direct.coordinate_transformation_mode = "pytorch_half_pixel";
    c.direct.scales = {1, 1, 1.5f, 0.5f};
    cases.push_back(c);
  }
  {  // linear half_pixel, but 3 x 1.5 is not whole: ONNX's scale, not 4/3
    Case c{"linear half_pixel, scale 1.5 of 3", {}, {}};
    c.node.strings = {{"mode", "linear"}};
    c.node.scales = {1, 1, 1.5f, 2};
    c.direct.mode = "linear", c.direct.scales = {1, 1, 1.5f, 2};
    cases.push_back(c);
  }
  {  // tf_crop_and_resize: a region, and a value outside it
    Case c{"tf_crop_and_resize", {}, {}};
    c.node.strings = {{"mode", "linear"},
                      {"coordinate_transformation_mode", "tf_crop_and_resize"}};
    c.node.floats = {{"extrapolation_value", 9.0f}};
    c.node.roi = {0, 0, -0.2f, 0.1f, 1, 1, 0.8f, 1.3f};
    c.node.sizes = {1, 2, 4, 5};
    c.direct.mode = "linear";
    c.direct.coordinate_transformation_mode = "tf_crop_and_resize";
    c.direct.extrapolation_value = 9.0f;
    c.direct.roi = {0, 0, -0.2f, 0.1f, 1, 1, 0.8f, 1.3f};
    c.direct.sizes = {1, 2, 4, 5};
    cases.push_back(c);
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const auto [name, got] = run_imported(in, c.node);
    EXPECT_EQ(name, "ONNXResize");
    EXPECT_EQ(got, run_direct(in, c.direct));
  }
}

// What Interpolate computes alike stays Interpolate: PyTorch's nearest
// upsampling (floor, asymmetric) and bilinear (half_pixel) with whole sizes.
TEST(OnnxImportResize, PyTorchsUpsamplingStaysInterpolate) {
  const mg::Shape in{1, 2, 3, 4};
  ResizeNode nearest;
  nearest.strings = {{"mode", "nearest"},
                     {"coordinate_transformation_mode", "asymmetric"},
                     {"nearest_mode", "floor"}};
  nearest.scales = {1, 1, 2, 2};
  const auto [n_name, n_y] = run_imported(in, nearest);
  EXPECT_EQ(n_name, "Interpolate");
  mg::ONNXResizeOptions o;
  o.coordinate_transformation_mode = "asymmetric", o.nearest_mode = "floor";
  o.scales = {1, 1, 2, 2};
  EXPECT_EQ(n_y, run_direct(in, o));

  ResizeNode linear;
  linear.strings = {{"mode", "linear"}};
  linear.sizes = {1, 2, 6, 8};
  const auto [l_name, l_y] = run_imported(in, linear);
  EXPECT_EQ(l_name, "Interpolate");
  mg::ONNXResizeOptions lo;
  lo.mode = "linear", lo.sizes = {1, 2, 6, 8};
  const auto want = run_direct(in, lo);
  ASSERT_EQ(l_y.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(l_y[i], want[i], 1e-6);
}

// Importing r fails with a message that names Resize and says `what`.
void expect_refused(const ResizeNode& r, const std::string& what) {
  try {
    run_imported({1, 1, 2, 2}, r);
    ADD_FAILURE() << "read although: " << what;
  } catch (const std::exception& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("Resize"), std::string::npos) << m;
    EXPECT_NE(m.find(what), std::string::npos) << m;
  }
}

TEST(OnnxImportResize, ErrorsNameTheOperatorAndWhatIsWrong) {
  ResizeNode no_size;
  no_size.strings = {{"mode", "cubic"}};
  expect_refused(no_size, "sizes or scales");
  ResizeNode bad_mode;
  bad_mode.strings = {{"mode", "lanczos"}};
  bad_mode.scales = {1, 1, 2, 2};
  expect_refused(bad_mode, "lanczos");
}

#else

TEST(OnnxImportResize, NeedsTheOnnxLibrary) {
  GTEST_SKIP() << "built without ONNX (apt-get install libonnx-dev "
                  "libprotobuf-dev)";
}

#endif

}  // namespace
