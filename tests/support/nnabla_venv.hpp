// NNabla itself for the tests that exchange files with it: the Python of
// the virtual environment scripts/install_nnabla.sh makes (.venv-nnabla,
// NNabla 1.39), or MIXGRAPH_NNABLA_PYTHON. Tests skip with a message
// without it. The including test defines MIXGRAPH_SOURCE_DIR.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace mg::test {

inline std::string nnabla_python() {
  if (const char* p = std::getenv("MIXGRAPH_NNABLA_PYTHON")) return p;
  return MIXGRAPH_SOURCE_DIR "/.venv-nnabla/bin/python";
}

inline bool nnabla_available() {
  const std::string cmd =
      nnabla_python() + " -c 'import nnabla' >/dev/null 2>&1";
  return std::filesystem::exists(nnabla_python()) &&
         std::system(cmd.c_str()) == 0;
}

}  // namespace mg::test

#define SKIP_WITHOUT_NNABLA()                                                \
  if (!mg::test::nnabla_available())                                         \
  GTEST_SKIP() << "nnabla is not installed (bash scripts/install_nnabla.sh " \
                  "makes .venv-nnabla; or set MIXGRAPH_NNABLA_PYTHON)"
