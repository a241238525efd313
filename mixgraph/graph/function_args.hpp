// A function's arguments as plain values, so a graph can be written out
// (YAML) and rebuilt without knowing each options struct.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace mg {

/// One argument's value. Integers, floats, flags, names and integer lists
/// cover every function's options.
using ArgValue = std::variant<bool, int64_t, double, std::string,
                              std::vector<int64_t>, std::vector<double>>;

/// Arguments in declaration order.
using FunctionArgs = std::vector<std::pair<std::string, ArgValue>>;

/// "int", "float", "bool", "string", "int list", "float list".
const char* arg_type_name(const ArgValue& v);

}  // namespace mg
