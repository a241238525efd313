#include <mixgraph/graph/parameter_scope.hpp>

#include <stdexcept>
#include <unordered_map>

#include <mixgraph/contexts/strings.hpp>

namespace mg {

struct ParameterScope::Store {
  ParameterList ordered;
  std::unordered_map<std::string, size_t> index;
};

ParameterScope::ParameterScope() : store_(std::make_shared<Store>()) {}

ParameterScope::ParameterScope(std::shared_ptr<Store> store, std::string prefix)
    : store_(std::move(store)), prefix_(std::move(prefix)) {}

ParameterScope ParameterScope::operator[](const std::string& name) const {
  if (name.empty() || name.front() == '/' || name.back() == '/') {
    throw std::invalid_argument(msg("[ParameterScope] scope name '", name,
                                    "' must be non-empty without a leading or "
                                    "trailing '/'"));
  }
  return ParameterScope(store_, prefix_ + name + "/");
}

VariablePtr ParameterScope::get(const std::string& name) const {
  auto it = store_->index.find(prefix_ + name);
  return it == store_->index.end() ? nullptr
                                   : store_->ordered[it->second].second;
}

VariablePtr ParameterScope::get_or_create(const std::string& name,
                                          const Shape& shape,
                                          const Initializer& init,
                                          bool need_grad) {
  if (VariablePtr v = get(name)) {
    if (v->shape() != shape) {
      throw std::invalid_argument(msg(
          "[ParameterScope] parameter '", prefix_, name, "' has shape ",
          shape_str(v->shape()), ", but ", shape_str(shape), " was requested"));
    }
    return v;
  }
  auto v = make_variable(shape, need_grad);
  v->set_persistent(true);
  v->set_name(prefix_ + name);
  if (init) init(*v->data());
  set(name, v);
  return v;
}

void ParameterScope::set(const std::string& name, const VariablePtr& var) {
  const std::string full = prefix_ + name;
  auto it = store_->index.find(full);
  if (it != store_->index.end()) {
    store_->ordered[it->second].second = var;
    return;
  }
  store_->index.emplace(full, store_->ordered.size());
  store_->ordered.emplace_back(full, var);
}

void ParameterScope::clear() {
  ParameterList kept;
  for (auto& kv : store_->ordered) {
    if (kv.first.compare(0, prefix_.size(), prefix_) != 0) kept.push_back(kv);
  }
  store_->ordered = std::move(kept);
  store_->index.clear();
  for (size_t i = 0; i < store_->ordered.size(); ++i) {
    store_->index.emplace(store_->ordered[i].first, i);
  }
}

ParameterList ParameterScope::parameters(bool grad_only) const {
  ParameterList out;
  for (const auto& kv : store_->ordered) {
    if (kv.first.compare(0, prefix_.size(), prefix_) != 0) continue;
    if (grad_only && !kv.second->need_grad()) continue;
    out.push_back(kv);
  }
  return out;
}

}  // namespace mg
