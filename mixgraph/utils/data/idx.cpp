#include <mixgraph/utils/data/idx.hpp>

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>

namespace mg {

namespace {

[[noreturn]] void fail(const std::string& tag, const std::string& path,
                       const std::string& what) {
  throw std::invalid_argument(msg("[", tag, "] ", path, ": ", what));
}

const char* type_name(int code) {
  switch (code) {
    case 0x08:
      return "unsigned byte";
    case 0x09:
      return "signed byte";
    case 0x0B:
      return "int16";
    case 0x0C:
      return "int32";
    case 0x0D:
      return "float32";
    case 0x0E:
      return "float64";
    default:
      return nullptr;
  }
}

std::string hex(uint64_t v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%0*llX", digits,
                static_cast<unsigned long long>(v));
  return buf;
}

// gzread over a whole buffer, with the two ways a read can end early told
// apart: the file ends (truncated) or zlib reports an error (corrupt).
class GzReader {
 public:
  explicit GzReader(const std::string& path) : path_(path) {
    errno = 0;
    file_ = gzopen(path.c_str(), "rb");
    if (!file_) {
      fail("read_idx", path,
           std::string("cannot open: ") +
               (errno ? std::strerror(errno) : "out of memory"));
    }
    gzbuffer(file_, 1 << 18);
  }
  ~GzReader() { gzclose(file_); }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  // Reads up to n bytes; returns how many were read before the end.
  uint64_t read(void* out, uint64_t n) {
    uint64_t done = 0;
    auto* p = static_cast<unsigned char*>(out);
    while (done < n) {
      const unsigned chunk = static_cast<unsigned>(
          std::min<uint64_t>(n - done, std::numeric_limits<int>::max() / 2));
      const int got = gzread(file_, p + done, chunk);
      if (got < 0) {
        int code = Z_OK;
        const char* msg = gzerror(file_, &code);
        if (code == Z_BUF_ERROR) return done;  // compressed stream cut short
        fail("read_idx", path_, std::string("is corrupt (zlib: ") + msg + ")");
      }
      if (got == 0) return done;
      done += static_cast<uint64_t>(got);
    }
    return done;
  }

 private:
  std::string path_;
  gzFile file_ = nullptr;
};

}  // namespace

IdxArray read_idx(const std::string& path) {
  GzReader in(path);
  unsigned char magic[4];
  const uint64_t got = in.read(magic, 4);
  if (got < 4) {
    fail("read_idx", path,
         "is truncated: it ends after " + std::to_string(got) +
             " bytes, before the 4-byte magic number");
  }
  const uint32_t magic_value = (uint32_t{magic[0]} << 24) |
                               (uint32_t{magic[1]} << 16) |
                               (uint32_t{magic[2]} << 8) | magic[3];
  const char* type = type_name(magic[2]);
  if (magic[0] != 0 || magic[1] != 0 || !type || magic[3] == 0) {
    fail("read_idx", path,
         "bad magic number " + hex(magic_value, 8) +
             ": an idx file starts with 0x00 0x00, an element type "
             "(0x08 for unsigned bytes) and the number of dimensions");
  }
  if (magic[2] != 0x08) {
    fail("read_idx", path,
         std::string("holds ") + type + " elements (type " + hex(magic[2], 2) +
             "); read_idx reads unsigned bytes (0x08)");
  }
  const int ndim = magic[3];
  std::vector<unsigned char> dims(4 * ndim);
  const uint64_t got_dims = in.read(dims.data(), dims.size());
  if (got_dims < dims.size()) {
    fail("read_idx", path,
         "is truncated: the header has " + std::to_string(ndim) +
             " dimensions but the file ends after " +
             std::to_string(4 + got_dims) + " bytes");
  }
  IdxArray array;
  uint64_t total = 1;
  for (int d = 0; d < ndim; ++d) {
    const unsigned char* b = &dims[4 * d];
    const uint64_t n = (uint64_t{b[0]} << 24) | (uint64_t{b[1]} << 16) |
                       (uint64_t{b[2]} << 8) | b[3];
    array.shape.push_back(static_cast<int64_t>(n));
    total *= n;
    if (total > (uint64_t{1} << 40)) {
      fail("read_idx", path,
           "has an implausible shape " + shape_str(array.shape) +
               "... (more than 2^40 elements)");
    }
  }
  // Grow with what the file holds, not with what its header claims: a
  // damaged header that promises 2^39 bytes is then "truncated", not a
  // bad_alloc (or the OOM killer).
  uint64_t got_data = 0;
  const uint64_t step = uint64_t{16} << 20;
  while (got_data < total) {
    const uint64_t want = std::min(step, total - got_data);
    array.data.resize(got_data + want);
    const uint64_t n = in.read(array.data.data() + got_data, want);
    got_data += n;
    if (n < want) break;
  }
  array.data.resize(got_data);
  if (got_data < total) {
    fail("read_idx", path,
         "is truncated: shape " + shape_str(array.shape) + " needs " +
             std::to_string(total) +
             " bytes of data, but the file ends after " +
             std::to_string(got_data));
  }
  unsigned char extra[4096];
  uint64_t trailing = 0;
  for (uint64_t n; (n = in.read(extra, sizeof extra)) > 0;) trailing += n;
  if (trailing > 0) {
    fail("read_idx", path,
         "has " + std::to_string(trailing) + " bytes after the " +
             std::to_string(total) + " bytes of its shape " +
             shape_str(array.shape) + " (wrong header or two files joined?)");
  }
  return array;
}

void write_idx(const std::string& path, const IdxArray& array, bool gzip) {
  if (array.shape.empty() || array.shape.size() > 255) {
    throw std::invalid_argument(msg("[write_idx] ", path, ": shape ",
                                    shape_str(array.shape),
                                    " must have 1 to 255 dimensions"));
  }
  if (static_cast<int64_t>(array.data.size()) != shape_size(array.shape)) {
    throw std::invalid_argument(
        msg("[write_idx] ", path, ": shape ", shape_str(array.shape), " needs ",
            shape_size(array.shape), " bytes, got ", array.data.size()));
  }
  std::vector<unsigned char> bytes = {
      0, 0, 0x08, static_cast<unsigned char>(array.shape.size())};
  for (int64_t n : array.shape) {
    for (int shift = 24; shift >= 0; shift -= 8) {
      bytes.push_back(static_cast<unsigned char>((n >> shift) & 0xFF));
    }
  }
  bytes.insert(bytes.end(), array.data.begin(), array.data.end());
  bool ok = false;
  if (gzip) {
    gzFile f = gzopen(path.c_str(), "wb");
    if (f) {
      ok = gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) ==
           static_cast<int>(bytes.size());
      ok = (gzclose(f) == Z_OK) && ok;
    }
  } else {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f) {
      ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
      ok = (std::fclose(f) == 0) && ok;
    }
  }
  if (!ok) {
    throw std::runtime_error(
        msg("[write_idx] ", path, ": cannot write: ", std::strerror(errno)));
  }
}

}  // namespace mg
