// Internal: whole zip archives in memory, through libzip (a .nnp is a zip).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace mg::nnp {

/// Entry name and its bytes.
using ZipEntries = std::vector<std::pair<std::string, std::string>>;

/// Every entry of the archive `path`, in the archive's order. A missing
/// file, one that is not a zip and a damaged entry are
/// std::invalid_argument tagged with `caller` and naming the file.
ZipEntries read_zip(const std::string& path, const std::string& caller);

/// Writes `entries` (deflated) to `path` atomically (through path.tmp); a
/// failure is std::runtime_error tagged with `caller`.
void write_zip(const std::string& path, const ZipEntries& entries,
               const std::string& caller);

}  // namespace mg::nnp
