// The idx format of MNIST and Fashion-MNIST, plain or gzip-compressed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <mixgraph/graph/shape.hpp>

namespace mg {

/// An unsigned byte array read from an idx file.
struct IdxArray {
  Shape shape;                // (N, rows, cols) for images, (N,) for labels
  std::vector<uint8_t> data;  // row-major, prod(shape) bytes
};

/// Reads an idx file of unsigned bytes (type 0x08), gzip-compressed or not
/// (zlib reads both). A missing file, a bad magic number, another element
/// type, a truncated or corrupt file and bytes after the data are
/// std::invalid_argument naming the file and what is wrong.
IdxArray read_idx(const std::string& path);

/// Writes an unsigned byte idx file, gzip-compressed when `gzip` (tests and
/// tools).
void write_idx(const std::string& path, const IdxArray& array, bool gzip);

}  // namespace mg
