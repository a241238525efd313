#include <mixgraph/solvers/device_ops.hpp>

#include <map>
#include <mutex>

namespace mg {

namespace {

struct Table {
  std::mutex mutex;
  std::map<std::string, SolverDeviceOps*> ops;
};

Table& table() {
  static Table* t = new Table();  // backends register from static init
  return *t;
}

}  // namespace

void register_solver_device_ops(const std::string& name, SolverDeviceOps* ops) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.ops[name] = ops;
}

SolverDeviceOps* find_solver_device_ops(const std::string& name) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.ops.find(name);
  return it == t.ops.end() ? nullptr : it->second;
}

}  // namespace mg
