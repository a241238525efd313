// load_nnp: NNabla's .nnp files read (the zip, the network in protobuf
// text or binary, the parameters in .h5 or protobuf, the executors), and
// the Nnp's accessors. save_nnp is in nnp_save.cpp.
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

namespace nnp {

TempFile::TempFile(const std::string& suffix) {
  static std::atomic<int> counter{0};
  path_ = (std::filesystem::temp_directory_path() /
           ("mg_nnp_" + std::to_string(::getpid()) + "_" +
            std::to_string(counter++) + suffix))
              .string();
}

TempFile::~TempFile() { std::remove(path_.c_str()); }

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The first error of a protobuf text parse, with its line and column.
namespace {

class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (text.empty()) {
      text = std::to_string(line + 1) + ":" + std::to_string(column + 1) +
             ": " + message;
    }
  }
  std::string text;
};

}  // namespace

// Parses protobuf text into `proto` (merging, as NNabla's loader does);
// returns the parser's first error, or "".
std::string merge_text(const std::string& text, proto::NNablaProtoBuf* proto) {
  FirstError errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (parser.MergeFromString(text, proto)) return "";
  return errors.text.empty() ? "does not parse" : errors.text;
}

}  // namespace nnp

namespace {

namespace pb = nnp::proto;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using google::protobuf::TextFormat;
using nnp::merge_text;
using nnp::read_bytes;
using nnp::TempFile;

// NNabla's loop control, which its own loader expands before running; a
// network holding it is refused here.
const std::unordered_set<std::string> kLoopFunctions = {
    "RepeatStart", "RepeatEnd", "RecurrentInput", "RecurrentOutput", "Delay"};

std::string extension_of(const std::string& name) {
  const size_t dot = name.rfind('.');
  return dot == std::string::npos ? "" : name.substr(dot);
}

// ---- loading ----

class Loader {
 public:
  Loader(const std::string& path, ParameterScope& params,
         const NnpOptions& options)
      : path_(path), params_(params), options_(options) {}

  Nnp load() {
    read_entries();
    Nnp nnp;
    for (const auto& e : proto_.executor()) {
      NnpExecutor x{e.name(), e.network_name(), {}, {}};
      for (const auto& d : e.data_variable())
        x.data.push_back(d.variable_name());
      for (const auto& o : e.output_variable()) {
        x.outputs.push_back(o.variable_name());
      }
      nnp.executors.push_back(std::move(x));
    }
    std::vector<std::string> names;
    for (const auto& net : proto_.network()) names.push_back(net.name());
    for (const auto& wanted : options_.networks) {
      if (std::find(names.begin(), names.end(), wanted) == names.end()) {
        refuse("no network named '" + wanted + "'" +
               did_you_mean(names, wanted));
      }
    }
    for (const auto& net : proto_.network()) {
      if (!options_.networks.empty() &&
          std::find(options_.networks.begin(), options_.networks.end(),
                    net.name()) == options_.networks.end()) {
        continue;
      }
      std::vector<std::string> read_by_executors;
      for (const auto& x : nnp.executors) {
        if (x.network_name != net.name()) continue;
        read_by_executors.insert(read_by_executors.end(), x.outputs.begin(),
                                 x.outputs.end());
      }
      nnp.networks.push_back(build(net, read_by_executors));
    }
    pb::NNablaProtoBuf other;
    if (proto_.has_global_config()) {
      *other.mutable_global_config() = proto_.global_config();
    }
    if (proto_.has_training_config()) {
      *other.mutable_training_config() = proto_.training_config();
    }
    *other.mutable_dataset() = proto_.dataset();
    *other.mutable_optimizer() = proto_.optimizer();
    *other.mutable_monitor() = proto_.monitor();
    TextFormat::PrintToString(other, &nnp.other_sections);
    return nnp;
  }

 private:
  [[noreturn]] void refuse(const std::string& what) const {
    throw std::invalid_argument(msg("[load_nnp] ", path_, ": ", what));
  }

  // The entries NNabla's loader reads, by extension (as it does): protobuf
  // text and binary merged into one message, HDF5 parameters; the rest
  // (nnp_version.txt, solver states) is ignored.
  void read_entries() {
    std::vector<std::pair<std::string, std::string>> h5;
    for (auto& [name, bytes] : nnp::read_zip(path_, "load_nnp")) {
      const std::string ext = extension_of(name);
      if (ext == ".nntxt" || ext == ".prototxt") {
        const std::string error = merge_text(bytes, &proto_);
        if (!error.empty()) refuse(name + ":" + error);
      } else if (ext == ".protobuf") {
        pb::NNablaProtoBuf part;
        if (!part.ParseFromString(bytes)) {
          refuse(name + " is not NNabla's binary protobuf");
        }
        proto_.MergeFrom(part);
      } else if (ext == ".h5") {
        h5.emplace_back(name, std::move(bytes));
      }
    }
    if (proto_.network_size() == 0) {
      refuse("holds no network (no *.nntxt or *.protobuf entry with one)");
    }
    for (const auto& [name, bytes] : h5) {
      TempFile file(".h5");
      std::ofstream(file.path(), std::ios::binary) << bytes;
      try {
        load_parameters(file.path(), params_);
      } catch (const std::exception& e) {
        refuse(name + ": " + e.what());
      }
    }
    for (const auto& p : proto_.parameter()) load_parameter(p);
  }

  void load_parameter(const pb::Parameter& p) {
    const Shape shape(p.shape().dim().begin(), p.shape().dim().end());
    int64_t size = 1;
    for (int64_t d : shape) size *= d;
    if (size != p.data_size()) {
      refuse("parameter '" + p.variable_name() + "' has " +
             std::to_string(p.data_size()) + " values for the shape " +
             shape_str(shape));
    }
    VariablePtr v = params_.get(p.variable_name());
    if (v && v->shape() != shape) {
      refuse("parameter '" + p.variable_name() + "' has shape " +
             shape_str(shape) + " in the file, but " + shape_str(v->shape()) +
             " in the scope");
    }
    if (!v) {
      v = make_variable(shape, p.need_grad());
      v->set_persistent(true);
      params_.set(p.variable_name(), v);
    }
    std::copy(p.data().begin(), p.data().end(), v->data()->cast<float>());
  }

  // A declared shape, the batch (-1) filled in.
  Shape shape_of(const pb::Variable& v, const std::string& where,
                 int64_t batch) const {
    Shape s;
    for (int64_t d : v.shape().dim()) {
      if (d == -1) {
        if (batch <= 0) {
          refuse(where + ": variable '" + v.name() +
                 "' has a free batch dimension (-1) and the network no "
                 "batch_size: set NnpOptions::batch_size");
        }
        d = batch;
      } else if (d < 0) {
        refuse(where + ": variable '" + v.name() + "' has a bad shape (" +
               std::to_string(d) + " in " + v.shape().ShortDebugString() +
               "; a dimension is -1, the batch, or at least 0)");
      }
      s.push_back(d);
    }
    return s;
  }

  // A function's arguments from its `*_param` message, through reflection:
  // the message's field names are NNabla's argument names, and ours.
  FunctionArgs args_of(const pb::Function& f, const std::string& where,
                       int64_t batch) const {
    const Reflection* refl = f.GetReflection();
    const FieldDescriptor* set = refl->GetOneofFieldDescriptor(
        f, f.GetDescriptor()->FindOneofByName("parameter"));
    FunctionArgs args;
    if (!set) return args;  // no arguments: NNabla's defaults
    const Message& param = refl->GetMessage(f, set);
    const Reflection* r = param.GetReflection();
    const auto* desc = param.GetDescriptor();
    for (int i = 0; i < desc->field_count(); ++i) {
      const FieldDescriptor* field = desc->field(i);
      const std::string& name = field->name();
      if (field->is_repeated()) {
        const int n = r->FieldSize(param, field);
        if (field->cpp_type() == FieldDescriptor::CPPTYPE_INT64) {
          std::vector<int64_t> v;
          for (int k = 0; k < n; ++k) {
            v.push_back(r->GetRepeatedInt64(param, field, k));
          }
          args.emplace_back(name, v);
        } else {
          std::vector<double> v;
          for (int k = 0; k < n; ++k) {
            v.push_back(field->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT
                            ? r->GetRepeatedFloat(param, field, k)
                            : r->GetRepeatedDouble(param, field, k));
          }
          args.emplace_back(name, v);
        }
        continue;
      }
      switch (field->cpp_type()) {
        case FieldDescriptor::CPPTYPE_INT64:
          args.emplace_back(name, r->GetInt64(param, field));
          break;
        case FieldDescriptor::CPPTYPE_FLOAT:
          args.emplace_back(name,
                            static_cast<double>(r->GetFloat(param, field)));
          break;
        case FieldDescriptor::CPPTYPE_DOUBLE:
          args.emplace_back(name, r->GetDouble(param, field));
          break;
        case FieldDescriptor::CPPTYPE_BOOL:
          args.emplace_back(name, r->GetBool(param, field));
          break;
        case FieldDescriptor::CPPTYPE_STRING:
          args.emplace_back(name, r->GetString(param, field));
          break;
        case FieldDescriptor::CPPTYPE_MESSAGE: {
          // Shape; Communicator (SyncBatchNormalization's) holds nothing and
          // is not an argument here.
          if (field->message_type()->name() != "Shape") break;
          const auto& shape =
              static_cast<const pb::Shape&>(r->GetMessage(param, field));
          std::vector<int64_t> dims(shape.dim().begin(), shape.dim().end());
          // NNabla's loader: a `shape` argument starting with -1 starts with
          // the batch size (Reshape and Broadcast written with a free batch).
          if (name == "shape" && !dims.empty() && dims[0] == -1) {
            if (batch <= 0) {
              refuse(where +
                     ": argument 'shape' starts with the batch (-1) "
                     "and the network has no batch_size: set "
                     "NnpOptions::batch_size");
            }
            dims[0] = batch;
          }
          args.emplace_back(name, dims);
          break;
        }
        default:
          refuse(where + ": argument '" + name + "' has a type not read here");
      }
    }
    return args;
  }

  Network build(const pb::Network& net,
                const std::vector<std::string>& read_by_executors) const {
    const std::string where = "network '" + net.name() + "'";
    if (net.repeat_info_size() > 0) {
      refuse(where + ": repeat_info '" + net.repeat_info(0).id() +
             "' (loop control) is not supported; expand the loop before "
             "saving");
    }
    const int64_t batch =
        options_.batch_size > 0 ? options_.batch_size : net.batch_size();
    std::unordered_map<std::string, const pb::Variable*> declared;
    for (const auto& v : net.variable()) {
      if (v.repeat_id_size() > 0) {
        refuse(where + ": variable '" + v.name() + "' has repeat_id '" +
               v.repeat_id(0) + "' (loop control), which is not supported");
      }
      if (!declared.emplace(v.name(), &v).second) {
        refuse(where + ": variable '" + v.name() + "' is declared twice");
      }
    }
    std::unordered_set<std::string> written, read;
    for (const auto& f : net.function()) {
      written.insert(f.output().begin(), f.output().end());
      read.insert(f.input().begin(), f.input().end());
    }
    Network result;
    result.name = net.name();
    std::unordered_map<std::string, VariablePtr> vars;
    std::string missing;
    for (const auto& v : net.variable()) {
      if (v.type() == "Parameter") {
        const Shape shape = shape_of(v, where, batch);
        VariablePtr p = params_.get(v.name());
        if (!p) {
          missing += "\n  '" + v.name() + "' " + shape_str(shape);
          continue;
        }
        if (p->shape() != shape) {
          refuse(where + ": parameter '" + v.name() + "' has shape " +
                 shape_str(shape) + " here, but " + shape_str(p->shape()) +
                 " in the parameters");
        }
        vars[v.name()] = p;
      } else if (v.type() == "Buffer" || v.type().empty()) {
        if (written.count(v.name())) continue;
        auto input = make_variable(shape_of(v, where, batch));
        input->set_name(v.name());
        vars[v.name()] = input;
        result.inputs.emplace_back(v.name(), input);
      } else {
        refuse(where + ": variable '" + v.name() + "' has type '" + v.type() +
               "' (expected Buffer or Parameter)");
      }
    }
    if (!missing.empty()) {
      refuse(where +
             ": these parameters have no value (no parameter file or "
             "`parameter` entry of the .nnp holds them, nor the scope):" +
             missing);
    }
    auto& registry = FunctionRegistry::instance();
    for (const auto& f : net.function()) {
      const std::string fwhere =
          where + ", function '" + f.name() + "' (" + f.type() + ")";
      if (kLoopFunctions.count(f.type()) || f.repeat_id_size() > 0 ||
          f.has_repeat_param() || f.has_recurrent_param()) {
        refuse(fwhere +
               ": loop control (repeat / recurrent) is not supported; expand "
               "the loop before saving");
      }
      if (!registry.has(f.type())) {
        refuse(fwhere + ": unknown function '" + f.type() + "'" +
               did_you_mean(registry.names(), f.type()));
      }
      std::vector<VariablePtr> inputs;
      for (const auto& in : f.input()) {
        auto it = vars.find(in);
        if (it == vars.end()) {
          refuse(fwhere + ": reads '" + in +
                 "', which no input, parameter or earlier function defines");
        }
        inputs.push_back(it->second);
      }
      const auto outs = network_graph::build_function(
          f.type(), args_of(f, fwhere, batch), inputs,
          [&](const std::string& what) { refuse(fwhere + ": " + what); });
      if (static_cast<int>(outs.size()) != f.output_size()) {
        refuse(fwhere + " has " + std::to_string(outs.size()) +
               " outputs, but " + std::to_string(f.output_size()) +
               " names are given");
      }
      for (size_t i = 0; i < outs.size(); ++i) {
        const std::string& name = f.output(static_cast<int>(i));
        auto it = declared.find(name);
        if (it == declared.end()) {
          refuse(fwhere + ": output '" + name +
                 "' is not among the network's variables");
        }
        const Shape expected = shape_of(*it->second, where, batch);
        // A shape that depends on the input values (NonZero,
        // PackPaddedSequence, ...) is provisional until forward runs on data:
        // the file's is the one of the data it was saved with.
        const bool provisional =
            outs[i]->parent()->function().output_shape_depends_on_data();
        if (!provisional && outs[i]->shape() != expected) {
          refuse(fwhere + ": output '" + name + "' has shape " +
                 shape_str(outs[i]->shape()) + ", but the file declares " +
                 shape_str(expected));
        }
        vars[name] = outs[i];
      }
    }
    auto add_output = [&](const std::string& name) {
      for (const auto& [n, v] : result.outputs) {
        if (n == name) return;
      }
      auto it = vars.find(name);
      if (it == vars.end()) {
        refuse(where + ": an executor reads '" + name +
               "', which the network does not compute");
      }
      result.outputs.emplace_back(name, it->second);
    };
    for (const auto& f : net.function()) {
      for (const auto& o : f.output()) {
        if (!read.count(o)) add_output(o);
      }
    }
    for (const auto& name : read_by_executors) add_output(name);
    return result;
  }

  const std::string& path_;
  ParameterScope& params_;
  const NnpOptions& options_;
  pb::NNablaProtoBuf proto_;
};

}  // namespace

const Network& Nnp::network(const std::string& name) const {
  std::vector<std::string> names;
  for (const auto& n : networks) {
    if (n.name == name) return n;
    names.push_back(n.name);
  }
  throw std::invalid_argument(
      msg("[Nnp] no network named '", name, "'", did_you_mean(names, name)));
}

Network Nnp::executor(const std::string& name) const {
  std::vector<std::string> names;
  for (const auto& x : executors) {
    names.push_back(x.name);
    if (x.name != name) continue;
    const Network& net = network(x.network_name);
    Network view;
    view.name = net.name;
    for (const auto& d : x.data) view.inputs.emplace_back(d, net.input(d));
    for (const auto& o : x.outputs) view.outputs.emplace_back(o, net.output(o));
    return view;
  }
  throw std::invalid_argument(
      msg("[Nnp] no executor named '", name, "'", did_you_mean(names, name)));
}

Nnp load_nnp(const std::string& path, ParameterScope& params,
             const NnpOptions& options) {
  return Loader(path, params, options).load();
}

}  // namespace mg
