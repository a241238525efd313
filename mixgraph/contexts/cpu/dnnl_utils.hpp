// oneDNN plumbing: the engine and stream, dtype mapping, error wrapping.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <initializer_list>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <mixgraph/contexts/dtype.hpp>
#include <mixgraph/contexts/strings.hpp>

namespace mg::cpu {

/// The process's oneDNN CPU engine (it uses the OpenMP pool).
dnnl::engine& dnnl_engine();
/// The stream primitives run on.
dnnl::stream& dnnl_stream();

/// Our dtype as oneDNN's; throws for types oneDNN does not compute in.
dnnl::memory::data_type dnnl_type(Dtype dtype);

/// Runs a oneDNN call, turning its error into std::runtime_error that
/// names `where`.
template <class Fn>
decltype(auto) dnnl_call(const std::string& where, Fn&& fn) {
  try {
    return fn();
  } catch (const dnnl::error& e) {
    throw std::runtime_error(
        msg("[", where, "] oneDNN: ", e.what(), " (status ", e.status, ")"));
  }
}

/// A primitive with its argument memories, made once and pointed at new data
/// on every call, so a call allocates nothing (making a dnnl::memory does).
/// Calls are serialised: the memories are shared.
class CachedPrimitive {
 public:
  CachedPrimitive() = default;
  /// `args`: the argument kinds (DNNL_ARG_SRC, ...) and their layouts, in
  /// the order execute() takes their data.
  CachedPrimitive(dnnl::primitive prim,
                  const std::vector<std::pair<int, dnnl::memory::desc>>& args);
  /// Runs the primitive on data[i] for the i-th argument and waits for it;
  /// oneDNN's errors become std::runtime_error naming `where`.
  void execute(const char* where,
               std::initializer_list<const void*> data) const;
  /// The same with fresh argument memories, on the calling thread's own
  /// stream and without the lock, so that threads of a team may each run
  /// the primitive at once: for one made to run on one thread with a
  /// scratchpad of the caller's (scratchpad_mode::user, passed as an
  /// argument), as oneDNN's library scratchpad may be shared.
  void execute_here(const char* where,
                    std::initializer_list<const void*> data) const;

 private:
  // Throws std::logic_error naming `where` unless n is the argument count.
  void check_arguments(const char* where, size_t n) const;

  dnnl::primitive prim_;
  std::vector<int> kinds_;
  std::unordered_map<int, dnnl::memory> args_;
  std::vector<dnnl::memory::desc> descs_;  // kinds_'s layouts
  std::unique_ptr<std::mutex> mutex_;
};

}  // namespace mg::cpu
