// save_nnp: a graph written as NNabla's .nnp (the network in protobuf text
// or binary, the parameters in .h5 or protobuf, an executor), with the
// sections a loaded file carried written back unchanged.
#include <mixgraph/utils/nnp.hpp>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/registry.hpp>
#include <mixgraph/graph/function_node.hpp>
#include <mixgraph/utils/hdf5/parameters.hpp>
#include <mixgraph/utils/network_graph.hpp>
#include <mixgraph/utils/nnp/zip_archive.hpp>

#include <mixgraph/utils/nnp/nnp_files.hpp>
namespace mg {

namespace {

namespace pb = nnp::proto;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using google::protobuf::TextFormat;
using nnp::kNnpVersion;
using nnp::merge_text;
using nnp::read_bytes;
using nnp::TempFile;

// ---- saving ----

[[noreturn]] void refuse_save(const std::string& what) {
  throw std::invalid_argument(msg("[save_nnp] ", what));
}

void set_shape(pb::Shape* shape, const Shape& dims) {
  for (int64_t d : dims) shape->add_dim(d);
}

// Writes one argument into the field of the same name of NNabla's
// `*_param` message (nnabla_args keeps only those).
void set_arg(Message* param, const std::string& fn, const std::string& name,
             const ArgValue& value) {
  const Reflection* r = param->GetReflection();
  const FieldDescriptor* field = param->GetDescriptor()->FindFieldByName(name);
  auto mismatch = [&]() {
    refuse_save("function " + fn + ": argument '" + name + "' is " +
                arg_type_name(value) + ", but NNabla's is " +
                field->type_name());
  };
  const auto* ints = std::get_if<std::vector<int64_t>>(&value);
  const auto* reals = std::get_if<std::vector<double>>(&value);
  if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
    auto* shape = static_cast<pb::Shape*>(r->MutableMessage(param, field));
    if (ints) {
      set_shape(shape, *ints);
    } else if (!reals || !reals->empty()) {
      mismatch();
    }
    return;
  }
  if (field->is_repeated()) {
    if (!ints && !reals) mismatch();
    const size_t n = ints ? ints->size() : reals->size();
    for (size_t k = 0; k < n; ++k) {
      const double x = ints ? static_cast<double>((*ints)[k]) : (*reals)[k];
      switch (field->cpp_type()) {
        case FieldDescriptor::CPPTYPE_INT64:
          if (!ints) mismatch();
          r->AddInt64(param, field, (*ints)[k]);
          break;
        case FieldDescriptor::CPPTYPE_FLOAT:
          r->AddFloat(param, field, static_cast<float>(x));
          break;
        case FieldDescriptor::CPPTYPE_DOUBLE:
          r->AddDouble(param, field, x);
          break;
        default:
          mismatch();
      }
    }
    return;
  }
  const auto* i = std::get_if<int64_t>(&value);
  const auto* d = std::get_if<double>(&value);
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT64:
      if (!i) mismatch();
      r->SetInt64(param, field, *i);
      break;
    case FieldDescriptor::CPPTYPE_FLOAT:
      if (!i && !d) mismatch();
      r->SetFloat(param, field, static_cast<float>(d ? *d : *i));
      break;
    case FieldDescriptor::CPPTYPE_DOUBLE:
      if (!i && !d) mismatch();
      r->SetDouble(param, field, d ? *d : static_cast<double>(*i));
      break;
    case FieldDescriptor::CPPTYPE_BOOL:
      if (auto b = std::get_if<bool>(&value)) {
        r->SetBool(param, field, *b);
      } else {
        mismatch();
      }
      break;
    case FieldDescriptor::CPPTYPE_STRING:
      if (auto s = std::get_if<std::string>(&value)) {
        r->SetString(param, field, *s);
      } else {
        mismatch();
      }
      break;
    default:
      mismatch();
  }
}

// The oneof field of Function that holds `type`'s arguments, or null when
// NNabla's `type` takes none.
const FieldDescriptor* param_field_of(const std::string& type) {
  const auto* oneof = pb::Function::descriptor()->FindOneofByName("parameter");
  for (int i = 0; i < oneof->field_count(); ++i) {
    if (oneof->field(i)->message_type()->name() == type + "Parameter") {
      return oneof->field(i);
    }
  }
  return nullptr;
}

// The arguments of `fn` that NNabla's `param` message has. Our own extra
// arguments (MaxPooling's including_pad) are left out where they hold
// their default, which means what NNabla does; anything else is refused.
FunctionArgs nnabla_args(Function& fn, const FieldDescriptor* param) {
  const auto* desc = param ? param->message_type() : nullptr;
  FunctionArgs kept, extra;
  for (auto& kv : fn.args()) {
    (desc && desc->FindFieldByName(kv.first) ? kept : extra).push_back(kv);
  }
  if (extra.empty()) return kept;
  FunctionArgs defaults;
  try {
    defaults = FunctionRegistry::instance()
                   .create_from_args(fn.name(), default_context(), kept)
                   ->args();
  } catch (const std::exception&) {
  }
  for (const auto& [name, value] : extra) {
    auto it = std::find_if(defaults.begin(), defaults.end(),
                           [&](const auto& d) { return d.first == name; });
    if (it != defaults.end() && it->second == value) continue;
    std::string takes;
    for (int i = 0; desc && i < desc->field_count(); ++i) {
      takes += (i ? ", '" : "'") + desc->field(i)->name() + "'";
    }
    refuse_save("function " + fn.name() + ": NNabla's " + fn.name() +
                " has no argument '" + name + "' (it takes " +
                (takes.empty() ? "none" : takes) +
                "), and here it is not at its default");
  }
  return kept;
}

// What add_network wrote: the names of the network's inputs and
// parameters, and its constants (attention's causal mask), which the file
// keeps as parameters without grad (NNabla has no constants).
struct AddedNetwork {
  std::vector<std::string> inputs, parameters;
  network_graph::NamedVariables constants;
};

// Adds network `name` (the graph below `outputs`) to `proto`.
AddedNetwork add_network(pb::NNablaProtoBuf& proto, const std::string& name,
                         const network_graph::NamedVariables& outputs,
                         const ParameterScope& params, bool free_batch) {
  const auto graph = network_graph::name_graph(outputs, params, "save_nnp",
                                               /*nnabla_functions=*/true);
  // The batch: the first input's first dimension. Variables computed from
  // the inputs with that first dimension write it as -1 (NNabla's
  // variable_batch_size); parameters and what is computed from them alone
  // keep theirs.
  int64_t batch = 0;
  for (const auto& [n, v] : graph.inputs) {
    if (!v->shape().empty()) {
      batch = v->shape()[0];
      break;
    }
  }
  if (!free_batch) batch = 0;
  std::unordered_set<const Variable*> batched;
  for (const auto& [n, v] : graph.inputs) batched.insert(v.get());
  pb::Network* net = proto.add_network();
  net->set_name(name);
  if (!graph.inputs.empty() && !graph.inputs[0].second->shape().empty()) {
    net->set_batch_size(graph.inputs[0].second->shape()[0]);
  }
  auto add_variable = [&](const std::string& n, const VariablePtr& v,
                          const char* type) {
    pb::Variable* var = net->add_variable();
    var->set_name(n);
    var->set_type(type);
    Shape dims = v->shape();
    if (batch > 0 && batched.count(v.get()) && !dims.empty() &&
        dims[0] == batch) {
      dims[0] = -1;
    }
    set_shape(var->mutable_shape(), dims);
  };
  std::unordered_map<std::string, int> type_count;
  size_t value_index = 0;
  for (const auto& f : graph.functions) {
    Function& fn = f.node->function();
    const std::string type = fn.name();
    bool from_inputs = false;
    for (const auto& in : f.node->inputs()) {
      from_inputs = from_inputs || batched.count(in.get()) > 0;
    }
    pb::Function* out = net->add_function();
    const int k = type_count[type]++;
    out->set_name(k == 0 ? type : type + "_" + std::to_string(k));
    out->set_type(type);
    for (const auto& in : f.inputs) out->add_input(in);
    for (const auto& o : f.outputs) {
      out->add_output(o);
      const VariablePtr& v = graph.values[value_index++].second;
      if (from_inputs) batched.insert(v.get());
    }
    const FieldDescriptor* field = param_field_of(type);
    const FunctionArgs args = nnabla_args(fn, field);
    if (!field) continue;
    Message* param = out->GetReflection()->MutableMessage(out, field);
    for (const auto& [arg, value] : args) {
      auto* dims = std::get_if<std::vector<int64_t>>(&value);
      if (arg == "shape" && from_inputs && batch > 0 && dims &&
          !dims->empty() && (*dims)[0] == batch) {
        std::vector<int64_t> free = *dims;
        free[0] = -1;
        set_arg(param, type, arg, free);
      } else {
        set_arg(param, type, arg, value);
      }
    }
  }
  AddedNetwork added;
  for (const auto& [n, v] : graph.inputs) {
    add_variable(n, v, "Buffer");
    added.inputs.push_back(n);
  }
  for (const auto& [n, v] : graph.values) add_variable(n, v, "Buffer");
  for (const auto& [n, v] : graph.parameters) {
    add_variable(n, v, "Parameter");
    added.parameters.push_back(n);
  }
  for (const auto& [n, v] : graph.constants) {
    add_variable(n, v, "Parameter");
    added.parameters.push_back(n);
    added.constants.emplace_back(n, v);
  }
  return added;
}

// Adds constant `n` of one of the networks to those of the file: networks
// built alike (training and inference) each have their own causal mask,
// named alike and equal; different data under one name is refused.
void add_constant(network_graph::NamedVariables& constants,
                  const std::string& n, const VariablePtr& v) {
  for (const auto& [m, w] : constants) {
    if (m != n) continue;
    const bool same =
        w == v || (w->shape() == v->shape() &&
                   std::equal(w->data()->get<const float>(),
                              w->data()->get<const float>() + w->size(),
                              v->data()->get<const float>()));
    if (!same) {
      refuse_save("two networks have different constants named '" + n +
                  "': name them apart (Variable::set_name)");
    }
    return;
  }
  constants.emplace_back(n, v);
}

// The parameters the file stores: the scope's, and the networks'
// constants (need_grad false) beside them.
ParameterScope stored_parameters(
    const ParameterScope& params,
    const network_graph::NamedVariables& constants) {
  if (constants.empty()) return params;
  ParameterScope stored;
  for (const auto& [n, v] : params.parameters(/*grad_only=*/false)) {
    stored.set(n, v);
  }
  for (const auto& [n, v] : constants) stored.set(n, v);
  return stored;
}

void add_executor(pb::NNablaProtoBuf& proto, const NnpExecutor& x,
                  const std::vector<std::string>& parameters) {
  pb::Executor* e = proto.add_executor();
  e->set_name(x.name);
  e->set_network_name(x.network_name);
  for (const auto& d : x.data) {
    auto* dv = e->add_data_variable();
    dv->set_variable_name(d);
    dv->set_data_name(d);
  }
  for (const auto& o : x.outputs) {
    auto* ov = e->add_output_variable();
    ov->set_variable_name(o);
    ov->set_data_name(o);
  }
  for (const auto& p : parameters) {
    e->add_parameter_variable()->set_variable_name(p);
  }
}

void write_nnp(const std::string& path, pb::NNablaProtoBuf& proto,
               const ParameterScope& params, const SaveNnpOptions& options,
               const std::string& other_sections) {
  if (!other_sections.empty()) {
    pb::NNablaProtoBuf other;
    const std::string error = merge_text(other_sections, &other);
    if (!error.empty()) refuse_save("other_sections:" + error);
    proto.MergeFrom(other);
  }
  nnp::ZipEntries entries;
  entries.emplace_back("nnp_version.txt", std::string(kNnpVersion) + "\n");
  if (options.binary) {
    for (const auto& [name, v] : params.parameters(/*grad_only=*/false)) {
      pb::Parameter* p = proto.add_parameter();
      p->set_variable_name(name);
      set_shape(p->mutable_shape(), v->shape());
      const float* data = v->data()->get<const float>();
      p->mutable_data()->Add(data, data + v->size());
      p->set_need_grad(v->need_grad());
    }
    std::string bytes;
    if (!proto.SerializeToString(&bytes)) {
      throw std::runtime_error(msg("[save_nnp] cannot serialize '", path, "'"));
    }
    entries.emplace_back("network.protobuf", std::move(bytes));
  } else {
    std::string text;
    TextFormat::PrintToString(proto, &text);
    entries.emplace_back("network.nntxt", std::move(text));
    TempFile file(".h5");
    save_parameters(file.path(), params);
    entries.emplace_back("parameter.h5", read_bytes(file.path()));
  }
  nnp::write_zip(path, entries, "save_nnp");
}

}  // namespace

void save_nnp(const std::string& path, const std::string& name,
              const std::vector<std::pair<std::string, VariablePtr>>& outputs,
              const ParameterScope& params, const SaveNnpOptions& options) {
  pb::NNablaProtoBuf proto;
  const AddedNetwork added =
      add_network(proto, name, outputs, params, options.free_batch);
  NnpExecutor x{options.executor_name, name, added.inputs, {}};
  for (const auto& [n, v] : outputs) x.outputs.push_back(n);
  add_executor(proto, x, added.parameters);
  write_nnp(path, proto, stored_parameters(params, added.constants), options,
            options.other_sections);
}

void save_nnp(const std::string& path, const Nnp& nnp,
              const ParameterScope& params, const SaveNnpOptions& options) {
  pb::NNablaProtoBuf proto;
  std::unordered_map<std::string, std::vector<std::string>> parameters;
  network_graph::NamedVariables constants;
  for (const auto& net : nnp.networks) {
    AddedNetwork added =
        add_network(proto, net.name, net.outputs, params, options.free_batch);
    parameters[net.name] = std::move(added.parameters);
    for (const auto& [n, v] : added.constants) add_constant(constants, n, v);
  }
  for (const auto& x : nnp.executors) {
    // An executor of a network not loaded (NnpOptions::networks) is left out.
    auto it = parameters.find(x.network_name);
    if (it != parameters.end()) add_executor(proto, x, it->second);
  }
  write_nnp(path, proto, stored_parameters(params, constants), options,
            nnp.other_sections);
}

}  // namespace mg
