#include <mixgraph/utils/inference.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/batch_normalization.hpp>
#include <mixgraph/functions/dropout.hpp>
#include <mixgraph/functions/elementwise_builders.hpp>
#include <mixgraph/functions/fused_batch_normalization.hpp>
#include <mixgraph/functions/loss.hpp>
#include <mixgraph/functions/ops/binary_ops.hpp>
#include <mixgraph/functions/random_augment.hpp>
#include <mixgraph/functions/registry.hpp>
#include <mixgraph/functions/shape_ops.hpp>
#include <mixgraph/functions/vat_noise.hpp>
#include <mixgraph/graph/function.hpp>
#include <mixgraph/graph/function_node.hpp>
#include <mixgraph/utils/hdf5/parameters.hpp>
#include <mixgraph/utils/yaml/network.hpp>

namespace mg {

namespace {

bool floating_dtype(Dtype d) {
  return d == Dtype::f32 || d == Dtype::f16 || d == Dtype::bf16;
}

// What a function becomes in the inference form: the one table of
// training-only behaviour (training_only_functions and inference_graph
// both read it).
enum class InferenceForm {
  same,                // computes the same in training and inference
  running_statistics,  // batch normalization with batch_stat true
  identity,            // Dropout, random flips, shifts and erasing
  center_crop,         // RandomCrop, ImageAugmentation: a Slice
  none,                // no inference form (VATNoise)
};

const ArgValue* find_arg(const Function& fn, const std::string& name) {
  for (const auto& [k, v] : fn.args()) {
    if (k == name) return &v;
  }
  return nullptr;
}

InferenceForm inference_form(const Function& fn) {
  const std::string name = fn.name();
  if (name == decl::BatchNormalization.name ||
      name == decl::FusedBatchNormalization.name ||
      name == decl::SyncBatchNormalization.name) {
    const ArgValue* b = find_arg(fn, "batch_stat");
    const bool batch_stat = b && std::get_if<bool>(b) && std::get<bool>(*b);
    return batch_stat ? InferenceForm::running_statistics : InferenceForm::same;
  }
  if (name == decl::Dropout.name || name == decl::RandomFlip.name ||
      name == decl::RandomShift.name || name == decl::RandomErase.name) {
    return InferenceForm::identity;
  }
  if (name == decl::RandomCrop.name || name == decl::ImageAugmentation.name) {
    return InferenceForm::center_crop;
  }
  if (name == decl::VATNoise.name) return InferenceForm::none;
  return InferenceForm::same;
}

// Losses and error metrics: their first input is the prediction.
bool is_loss(const std::string& name) {
  for (const char* loss :
       {decl::SoftmaxCrossEntropy.name, decl::SigmoidCrossEntropy.name,
        decl::CategoricalCrossEntropy.name, decl::KLMultinomial.name,
        decl::TopNError.name, decl::ConfusionMatrix.name,
        ops::SquaredError::name, ops::AbsoluteError::name, ops::HuberLoss::name,
        ops::EpsilonInsensitiveLoss::name, ops::BinaryCrossEntropy::name,
        ops::BinaryError::name}) {
    if (name == loss) return true;
  }
  return false;
}

// `out` where no loss is below it; else the one variable its losses read
// as their prediction.
VariablePtr prediction_of(const VariablePtr& out, const std::string& label) {
  const char* tag = "[inference_graph] ";
  if (!out) throw std::invalid_argument(msg(tag, "output ", label, " is null"));
  std::vector<VariablePtr> predictions;
  std::string losses;
  for (FunctionNode* node : functions_in_order({out})) {
    const std::string name = node->function().name();
    if (!is_loss(name)) continue;
    const VariablePtr& p = node->inputs().at(0);
    losses +=
        (losses.empty() ? "" : ", ") + name + " of " + shape_str(p->shape());
    if (std::find(predictions.begin(), predictions.end(), p) ==
        predictions.end()) {
      predictions.push_back(p);
    }
  }
  if (predictions.empty()) return out;
  if (predictions.size() > 1) {
    throw std::invalid_argument(
        msg(tag, "output ", label, " is computed from losses that read ",
            predictions.size(), " different predictions (", losses,
            "): pass the predictions as the outputs"));
  }
  return predictions[0];
}

// The Slice that crops x's shape to y's around the centre, on the axes
// from the first that differs (the batch axes are left to the input).
std::shared_ptr<Function> center_crop(const FunctionNode& node, const Shape& x,
                                      const Shape& y) {
  const Function& fn = const_cast<FunctionNode&>(node).function();
  const char* tag = "[inference_graph] ";
  if (fn.name() == decl::ImageAugmentation.name) {
    const ArgValue* pad = find_arg(fn, "pad");
    const auto* p = pad ? std::get_if<std::vector<int64_t>>(pad) : nullptr;
    if (p && std::any_of(p->begin(), p->end(), [](int64_t e) { return e; })) {
      throw std::invalid_argument(
          msg(tag, "ImageAugmentation pads its input by ", shape_str(*p),
              ": there is no deterministic form of its crop; build the "
              "inference input at its output's shape ",
              shape_str(y), " and take the outputs above it"));
    }
  }
  if (x.size() != y.size()) {
    throw std::invalid_argument(msg(tag, fn.name(), " maps ", shape_str(x),
                                    " to ", shape_str(y),
                                    ": a centre crop keeps the rank"));
  }
  size_t first = 0;
  while (first < x.size() && x[first] == y[first]) ++first;
  if (first == x.size()) return nullptr;  // crops nothing: the identity
  std::vector<int64_t> start, stop, step;
  for (size_t a = first; a < x.size(); ++a) {
    start.push_back((x[a] - y[a]) / 2);
    stop.push_back(start.back() + y[a]);
    step.push_back(1);
  }
  return FunctionRegistry::instance().create_from_args(
      decl::Slice.name, default_context(),
      {{"start", start}, {"stop", stop}, {"step", step}});
}

}  // namespace

std::vector<std::string> training_only_functions(
    const std::vector<VariablePtr>& outputs) {
  std::vector<std::string> found;
  for (FunctionNode* node : functions_in_order(outputs)) {
    const Function& fn = node->function();
    const InferenceForm form = inference_form(fn);
    if (form == InferenceForm::same) continue;
    std::string what = fn.name();
    if (form == InferenceForm::running_statistics) {
      what += " (batch_stat true)";
    }
    if (std::find(found.begin(), found.end(), what) == found.end()) {
      found.push_back(what);
    }
  }
  return found;
}

std::vector<VariablePtr> inference_graph(
    const std::vector<VariablePtr>& outputs) {
  const char* tag = "[inference_graph] ";
  std::vector<VariablePtr> heads;
  for (size_t i = 0; i < outputs.size(); ++i) {
    heads.push_back(prediction_of(outputs[i], msg("#", i)));
  }
  // Each variable of the training graph that the inference graph computes
  // otherwise, with the variable that does; the keys are held so that no
  // other variable takes their address.
  std::map<VariablePtr, VariablePtr> replaced;
  auto now = [&](const VariablePtr& v) {
    auto it = replaced.find(v);
    return it == replaced.end() ? v : it->second;
  };
  auto& registry = FunctionRegistry::instance();
  for (FunctionNode* node : functions_in_order(heads)) {
    const Function& fn = node->function();
    std::vector<VariablePtr> inputs;
    bool changed = false;
    for (const auto& in : node->inputs()) {
      inputs.push_back(now(in));
      changed = changed || inputs.back() != in;
    }
    const std::vector<VariablePtr> old_outputs = node->outputs();
    const InferenceForm form = inference_form(fn);
    std::shared_ptr<Function> rebuilt;
    switch (form) {
      case InferenceForm::none:
        throw std::invalid_argument(
            msg(tag, fn.name(),
                " has no inference form (it belongs to a training loss): "
                "pass outputs that do not read it"));
      case InferenceForm::same:
        if (!changed) continue;  // shared with the training graph
        rebuilt =
            registry.create_from_args(fn.name(), default_context(), fn.args());
        break;
      case InferenceForm::identity:
        replaced[old_outputs.at(0)] = inputs.at(0);
        continue;
      case InferenceForm::running_statistics: {
        FunctionArgs args;
        const bool sync = fn.name() == decl::SyncBatchNormalization.name;
        for (auto [k, v] : fn.args()) {
          if (k == "batch_stat") v = false;
          if (sync && k == "group") continue;  // one process at inference
          args.emplace_back(k, v);
        }
        rebuilt = registry.create_from_args(
            sync ? decl::BatchNormalization.name : fn.name(), default_context(),
            args);
        break;
      }
      case InferenceForm::center_crop:
        rebuilt = center_crop(*node, node->setup_input_shapes().at(0),
                              old_outputs.at(0)->shape());
        if (!rebuilt) {
          replaced[old_outputs.at(0)] = inputs.at(0);
          continue;
        }
        break;
    }
    Variables raw;
    for (const auto& v : inputs) raw.push_back(v.get());
    const int n = rebuilt->num_outputs_for(raw);
    const auto outs =
        connect(std::make_shared<FunctionNode>(rebuilt, inputs), n);
    for (size_t o = 0; o < old_outputs.size() && o < outs.size(); ++o) {
      replaced[old_outputs[o]] = outs[o];
    }
  }
  std::vector<VariablePtr> result;
  for (const auto& h : heads) {
    VariablePtr v = now(h);
    // An output the identity reduced to a leaf (dropout(x)) is computed
    // still, so that it is an output and not an input when saved.
    if (!v->parent()) v = functions::identity(v);
    result.push_back(v);
  }
  return result;
}

VariablePtr inference_graph(const VariablePtr& output) {
  return inference_graph(std::vector<VariablePtr>{output}).at(0);
}

std::vector<std::pair<std::string, VariablePtr>> inference_graph(
    const std::vector<std::pair<std::string, VariablePtr>>& outputs) {
  std::vector<VariablePtr> vars;
  for (const auto& [name, v] : outputs) {
    if (!v) {
      throw std::invalid_argument(
          msg("[inference_graph] output '", name, "' is null"));
    }
    vars.push_back(v);
  }
  const auto converted = inference_graph(vars);
  std::vector<std::pair<std::string, VariablePtr>> result;
  for (size_t i = 0; i < outputs.size(); ++i) {
    result.emplace_back(outputs[i].first, converted[i]);
  }
  return result;
}

InferenceConversion convert_parameters_for_inference(
    const std::vector<VariablePtr>& outputs, const ParameterScope& params) {
  const char* tag = "[convert_parameters_for_inference] ";
  std::map<const Variable*, std::string> name_of;
  for (const auto& [name, var] : params.parameters(/*grad_only=*/false)) {
    name_of[var.get()] = name;
  }
  // The type each reading function wants of each parameter.
  std::map<const Variable*, std::set<Dtype>> wanted;
  std::set<const FunctionNode*> seen;
  std::vector<const FunctionNode*> stack;
  for (const auto& out : outputs) {
    if (!out) throw std::invalid_argument(msg(tag, "an output is null"));
    if (out->parent()) stack.push_back(out->parent().get());
  }
  while (!stack.empty()) {
    const FunctionNode* node = stack.back();
    stack.pop_back();
    if (!seen.insert(node).second) continue;
    auto& fn = const_cast<FunctionNode*>(node)->function();
    const auto& inputs = node->inputs();
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Variable* v = inputs[i].get();
      if (!v) continue;
      if (v->parent()) {
        stack.push_back(v->parent().get());
        continue;
      }
      if (!name_of.count(v)) continue;  // an input, not a parameter
      const Port::Kind kind = fn.input_decl(static_cast<int>(i)).kind;
      if (kind == Port::integer) continue;
      wanted[v].insert(kind == Port::float32 ? Dtype::f32 : fn.dtype());
    }
  }
  InferenceConversion report;
  for (const auto& [name, var] : params.parameters(/*grad_only=*/false)) {
    SyncedArray& a = var->data()->array();
    const Dtype have = a.has_head() ? a.dtype() : Dtype::f32;
    report.bytes_before += static_cast<int64_t>(a.size() * dtype_size(have));
    auto it = wanted.find(var.get());
    Dtype to = have;
    if (it != wanted.end() && floating_dtype(have)) {
      // One reader in fp32 keeps it fp32; else the reduced type they share.
      to = it->second.count(Dtype::f32) || it->second.size() != 1
               ? Dtype::f32
               : *it->second.begin();
      if (to == Dtype::f32) {
        report.kept_float.push_back(name);
      } else {
        report.reduced.push_back(name);
        report.type_config = dtype_name(to);
      }
      if (to != have) a.cast(to);  // converts once, drops the fp32 copy
    }
    report.bytes_after += static_cast<int64_t>(a.size() * dtype_size(to));
  }
  return report;
}

InferenceConversion convert_network_for_inference(const std::string& yaml_in,
                                                  const std::string& h5_in,
                                                  const std::string& yaml_out,
                                                  const std::string& h5_out,
                                                  const Context& context) {
  ContextGuard guard(context);
  ParameterScope params;
  // A free batch dimension needs a size to build the graph; 1 will do.
  const Network net =
      load_trained_network(yaml_in, h5_in, params, NetworkOptions{1});
  std::vector<VariablePtr> outputs;
  for (const auto& [name, v] : net.outputs) outputs.push_back(v);
  InferenceConversion report =
      convert_parameters_for_inference(outputs, params);
  save_parameters(h5_out, params);
  if (yaml_out != yaml_in) {
    std::filesystem::copy_file(
        yaml_in, yaml_out, std::filesystem::copy_options::overwrite_existing);
  }
  return report;
}

}  // namespace mg
