#include <mixgraph/contexts/cpu/dnnl_utils.hpp>

#include <mixgraph/contexts/cpu/cpu_features.hpp>
#include <mixgraph/contexts/strings.hpp>

namespace mg::cpu {

dnnl::engine& dnnl_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

bool dnnl_bf16_isa() {
  // The ISAs are sets of bits, each holding the ones below it (not their
  // order: avx2_vnni's value is above AMX's).
  static const bool bf16 = [] {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const auto bf16_isa =
        static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
    return (isa & bf16_isa) == bf16_isa;
  }();
  return bf16;
}

dnnl::stream& dnnl_stream() {
  static dnnl::stream stream(dnnl_engine());
  return stream;
}

dnnl::memory::data_type dnnl_type(Dtype dtype) {
  using dt = dnnl::memory::data_type;
  switch (dtype) {
    case Dtype::f32:
      return dt::f32;
    case Dtype::f16:
      return dt::f16;
    case Dtype::bf16:
      return dt::bf16;
    case Dtype::i32:
      return dt::s32;
    case Dtype::u8:
      return dt::u8;
    default:
      break;
  }
  throw std::invalid_argument(
      msg("[dnnl_type] oneDNN has no type for ", dtype_name(dtype)));
}

CachedPrimitive::CachedPrimitive(
    dnnl::primitive prim,
    const std::vector<std::pair<int, dnnl::memory::desc>>& args)
    : prim_(std::move(prim)), mutex_(std::make_unique<std::mutex>()) {
  for (const auto& [kind, md] : args) {
    kinds_.push_back(kind);
    descs_.push_back(md);
    args_.emplace(kind, dnnl::memory(md, dnnl_engine(), nullptr));
  }
}

void CachedPrimitive::check_arguments(const char* where, size_t n) const {
  if (n != kinds_.size()) {
    throw std::logic_error(msg("[", where, "] ", n,
                               " arguments given to a primitive that takes ",
                               kinds_.size()));
  }
}

void CachedPrimitive::execute(const char* where,
                              std::initializer_list<const void*> data) const {
  check_arguments(where, data.size());
  std::lock_guard<std::mutex> lock(*mutex_);
  dnnl_call(where, [&] {
    auto p = data.begin();
    for (int kind : kinds_) {
      args_.at(kind).set_data_handle(const_cast<void*>(*p++));
    }
    prim_.execute(dnnl_stream(), args_);
    dnnl_stream().wait();
  });
}

void CachedPrimitive::execute_here(
    const char* where, std::initializer_list<const void*> data) const {
  check_arguments(where, data.size());
  thread_local dnnl::stream stream(dnnl_engine());
  dnnl_call(where, [&] {
    std::unordered_map<int, dnnl::memory> args;
    auto p = data.begin();
    for (size_t i = 0; i < kinds_.size(); ++i, ++p) {
      args.emplace(kinds_[i], dnnl::memory(descs_[i], dnnl_engine(),
                                           const_cast<void*>(*p)));
    }
    prim_.execute(stream, args);
    stream.wait();
  });
}

}  // namespace mg::cpu
