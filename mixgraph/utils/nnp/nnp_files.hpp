// What the .nnp reader and writer share (nnp_load.cpp, nnp_save.cpp):
// NNabla's generated schema, the version NNabla writes, and a temporary
// file for HDF5, which reads and writes files, not memory. Internal.
#pragma once

#include <string>

#include "nnabla.pb.h"

namespace mg::nnp {

namespace pb = proto;

/// What NNabla's save writes as nnp_version.txt.
inline constexpr const char* kNnpVersion = "0.1";

/// A file of the process's own under the temporary directory, removed when
/// this goes out of scope.
class TempFile {
 public:
  explicit TempFile(const std::string& suffix);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// Parses protobuf text into `proto` (merging, as NNabla's loader does);
/// returns the parser's first error ("line:column: message"), or "".
std::string merge_text(const std::string& text, proto::NNablaProtoBuf* proto);

/// The whole file at `path`.
std::string read_bytes(const std::string& path);

}  // namespace mg::nnp
