#include <mixgraph/contexts/cpu/dnnl_utils.hpp>

namespace mg::cpu {

dnnl::engine& dnnl_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& dnnl_stream() {
  static dnnl::stream stream(dnnl_engine());
  return stream;
}

dnnl::memory::data_type dnnl_type(Dtype dtype) {
  using dt = dnnl::memory::data_type;
  switch (dtype) {
    case Dtype::f32: return dt::f32;
    case Dtype::f16: return dt::f16;
    case Dtype::bf16: return dt::bf16;
    case Dtype::i32: return dt::s32;
    case Dtype::u8: return dt::u8;
    default: break;
  }
  throw std::invalid_argument(std::string("[dnnl_type] oneDNN has no type for ") +
                              dtype_name(dtype));
}

}  // namespace mg::cpu
