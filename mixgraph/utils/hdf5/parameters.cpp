#include <mixgraph/utils/hdf5/parameters.hpp>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <mixgraph/utils/hdf5/parameters_io.hpp>

namespace mg {

std::string legacy_parameter_name(const std::string& name) {
  static const char* const kLayers[] = {"affine",
                                        "conv",
                                        "depthwise_conv",
                                        "deconv",
                                        "depthwise_deconv",
                                        "embed",
                                        "bn",
                                        "layer_normalization",
                                        "group_normalization",
                                        "instance_normalization",
                                        "prelu",
                                        "lstm"};
  std::vector<std::string> parts;
  for (size_t at = 0;;) {
    const size_t slash = name.find('/', at);
    parts.push_back(name.substr(at, slash - at));
    if (slash == std::string::npos) break;
    at = slash + 1;
  }
  if (parts.size() >= 2 && parts[parts.size() - 2] == "multi_head_attention") {
    // q_weight -> q_proj/W, out_bias -> out_proj/b.
    const std::string& leaf = parts.back();
    const size_t underscore = leaf.rfind('_');
    if (underscore != std::string::npos) {
      const std::string kind = leaf.substr(underscore + 1);
      if (kind == "weight" || kind == "bias") {
        parts[parts.size() - 2] = leaf.substr(0, underscore) + "_proj";
        parts.back() = kind == "weight" ? "W" : "b";
      }
    }
  } else {
    // Drop the layer scopes just above the leaf ("lstm/affine" of a cell).
    while (parts.size() >= 2) {
      const std::string& layer = parts[parts.size() - 2];
      const bool known = std::any_of(std::begin(kLayers), std::end(kLayers),
                                     [&](const char* l) { return layer == l; });
      if (!known) break;
      parts.erase(parts.end() - 2);
    }
  }
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    out += (i ? "/" : "") + parts[i];
  }
  return out;
}

namespace h5 {

void write_parameters(File& f, hid_t group, const ParameterList& params) {
  int64_t index = 0;
  for (const auto& [name, var] : params) {
    Handle parent = ensure_parent_groups(group, name);
    const std::string leaf = name.substr(name.find_last_of('/') + 1);
    const Dtype dtype = var->data()->array().has_head()
                            ? var->data()->array().dtype()
                            : Dtype::f32;
    write_dataset(f, parent.get(), leaf, var->shape(), dtype,
                  var->data()->array().get(dtype));
    Handle ds(H5Dopen2(parent.get(), leaf.c_str(), H5P_DEFAULT), H5Dclose);
    write_int_attr(f, ds.get(), "need_grad", var->need_grad() ? 1 : 0);
    write_int_attr(f, ds.get(), "index", index++);
  }
}

void read_parameters(const File& f, hid_t group, ParameterScope& scope,
                     const LoadParametersOptions& options) {
  struct Entry {
    std::string name;
    DatasetInfo info;
    int64_t index;
    bool need_grad;
    VariablePtr existing;
  };
  std::vector<Entry> entries;
  std::string problems;
  // With legacy_names: the scope's parameters by their old names.
  std::map<std::string, std::string> renamed;
  if (options.legacy_names) {
    for (const auto& [full, var] : scope.parameters(/*grad_only=*/false)) {
      const std::string name = full.substr(scope.prefix().size());
      const std::string old = legacy_parameter_name(name);
      if (old != name) renamed[old] = name;
    }
  }
  for (const auto& file_name : list_datasets(f, group)) {
    Handle ds(H5Dopen2(group, file_name.c_str(), H5P_DEFAULT), H5Dclose);
    std::string name = file_name;
    if (!scope.get(name) && renamed.count(name)) name = renamed[name];
    Entry e{file_name, dataset_info(f, group, file_name),
            read_int_attr(f, ds.get(), file_name, "index"),
            read_bool_attr(f, ds.get(), file_name, "need_grad"),
            scope.get(name)};
    if (e.existing) {
      const Dtype have = e.existing->data()->array().has_head()
                             ? e.existing->data()->array().dtype()
                             : Dtype::f32;
      const bool reshaped =
          name != file_name && e.existing->size() == shape_size(e.info.shape);
      if (e.existing->shape() != e.info.shape && !reshaped) {
        problems += "\n  '" + name + "' has shape " + shape_str(e.info.shape) +
                    " in the file, but " + shape_str(e.existing->shape()) +
                    " in the scope";
      } else if (have != e.info.dtype && !options.convert_dtype) {
        problems += "\n  '" + name + "' is " + dtype_name(e.info.dtype) +
                    " in the file, but " + dtype_name(have) +
                    " in the scope (set convert_dtype to convert)";
      }
    }
    entries.push_back(std::move(e));
  }
  if (!problems.empty()) {
    fail(f.tag, f.path, "", "does not match the parameters:" + problems);
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.index < b.index; });
  // Read everything before touching the scope, so a failed read loses nothing.
  std::vector<NdArrayPtr> arrays;
  for (const auto& e : entries) {
    auto a = make_ndarray(e.info.shape);
    const Dtype target = e.existing && options.convert_dtype &&
                                 e.existing->data()->array().has_head()
                             ? e.existing->data()->array().dtype()
                             : e.info.dtype;
    void* out = a->array().cast(target, "cpu", /*write_only=*/true);
    read_dataset(f, group, e.name, target, out, a->size());
    arrays.push_back(a);
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    if (e.existing) {
      // Copy into the existing array: graphs built on it keep working.
      SyncedArray& src = arrays[i]->array();
      const Dtype dt = src.dtype();
      std::memcpy(e.existing->data()->array().cast(dt, "cpu", true),
                  src.get(dt), src.size() * dtype_size(dt));
    } else {
      auto v = make_variable(e.info.shape, e.need_grad);
      v->set_persistent(true);
      v->set_name(scope.prefix() + e.name);
      v->set_data(arrays[i]);
      scope.set(e.name, v);
    }
  }
}

}  // namespace h5

void save_parameters(const std::string& path, const ParameterScope& scope) {
  h5::write_atomically(path, "save_parameters", [&](h5::File& f) {
    h5::write_parameters(f, f.handle.get(),
                         scope.parameters(/*grad_only=*/false));
  });
}

void load_parameters(const std::string& path, ParameterScope& scope,
                     const LoadParametersOptions& options) {
  h5::File f = h5::open_for_read(path, "load_parameters");
  hid_t root = f.handle.get();
  // A checkpoint holds the parameters in its group "parameters", beside the
  // solver's states: read those, no solver needed.
  if (h5::exists(root, "iteration") && h5::exists(root, "parameters")) {
    h5::Handle group = h5::open_group(f, root, "parameters");
    h5::read_parameters(f, group.get(), scope, options);
    return;
  }
  h5::read_parameters(f, root, scope, options);
}

}  // namespace mg
