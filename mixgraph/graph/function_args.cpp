#include <mixgraph/graph/function_args.hpp>

namespace mg {

const char* arg_type_name(const ArgValue& v) {
  switch (v.index()) {
    case 0:
      return "bool";
    case 1:
      return "int";
    case 2:
      return "float";
    case 3:
      return "string";
    case 4:
      return "int list";
    case 5:
      return "float list";
  }
  return "unknown";
}

}  // namespace mg
