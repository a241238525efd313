// Internal HDF5 plumbing shared by parameters, solver states and
// checkpoints: RAII handles, type mapping, errors that name the file and the
// entry, and atomic writes. Not installed as public API.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <mixgraph/contexts/dtype.hpp>
#include <mixgraph/graph/ndarray.hpp>

namespace mg::h5 {

/// Owns an HDF5 identifier and closes it with the right call.
class Handle {
 public:
  Handle() = default;
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Handle(Handle&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = -1; }
  Handle& operator=(Handle&& o) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle();
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }

 private:
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
};

/// An error about `entry` in `file`, tagged by the API call
/// ("load_parameters"): std::invalid_argument, for a file that is missing,
/// damaged or does not fit what reads it.
[[noreturn]] void fail(const std::string& tag, const std::string& file,
                       const std::string& entry, const std::string& what);
/// The same as std::runtime_error, for a write that failed (the disk, not
/// the caller's input).
[[noreturn]] void fail_write(const std::string& tag, const std::string& file,
                             const std::string& entry, const std::string& what);

/// An open file with the name and tag used in its errors.
struct File {
  Handle handle;
  std::string path;
  std::string tag;
};

/// Opens an existing file read-only; a missing, truncated or non-HDF5 file
/// is an error naming it. HDF5's own error printing is turned off.
File open_for_read(const std::string& path, const std::string& tag);

/// Writes through `write(file)` into a temporary file beside `path`, flushes
/// and fsyncs it, then renames it over `path`: a crash at any point leaves
/// either the old file or the new one, never a torn one.
void write_atomically(const std::string& path, const std::string& tag,
                      const std::function<void(File&)>& write);

/// The HDF5 file type for a dtype; half is IEEE binary16 (h5py's float16).
Handle file_type(Dtype dtype);
/// The dtype stored in a dataset's type; an unsupported type is an error.
Dtype dtype_of_type(hid_t type, const File& f, const std::string& entry);

/// Creates the groups of "a/b/c" up to "a/b" (like mkdir -p) and returns
/// the parent group of the last component.
Handle ensure_parent_groups(hid_t root, const std::string& name);
Handle create_group(hid_t parent, const std::string& name);

/// Writes `n` elements of dtype at `data` as dataset `name` (relative to
/// loc) with the given shape.
void write_dataset(File& f, hid_t loc, const std::string& name,
                   const Shape& shape, Dtype dtype, const void* data);
/// Writes an integer attribute.
void write_int_attr(File& f, hid_t obj, const std::string& name, int64_t v);
/// Writes a double attribute.
void write_double_attr(File& f, hid_t obj, const std::string& name, double v);

/// Writes a string attribute (fixed length, ASCII: h5py reads it as str).
void write_string_attr(File& f, hid_t obj, const std::string& name,
                       const std::string& v);
/// Reads a string attribute; "" when it is missing.
std::string read_string_attr(const File& f, hid_t obj, const std::string& entry,
                             const std::string& name);

/// What a dataset holds.
struct DatasetInfo {
  Shape shape;
  Dtype dtype;
};
DatasetInfo dataset_info(const File& f, hid_t loc, const std::string& name);
/// Reads a dataset into `out` of `dtype` (the file's type is converted).
void read_dataset(const File& f, hid_t loc, const std::string& name,
                  Dtype dtype, void* out, int64_t n);
/// Reads an integer attribute; a missing or non-integer one is an error.
int64_t read_int_attr(const File& f, hid_t obj, const std::string& entry,
                      const std::string& name);
/// An integer attribute (non-zero: true) or a bool one as h5py writes it
/// (an HDF5 enum FALSE/TRUE: NNabla's "need_grad").
bool read_bool_attr(const File& f, hid_t obj, const std::string& entry,
                    const std::string& name);
double read_double_attr(const File& f, hid_t obj, const std::string& entry,
                        const std::string& name);
bool has_attr(hid_t obj, const std::string& name);
/// The names of an object's attributes with their classes (H5T_INTEGER,
/// H5T_FLOAT, ...).
std::vector<std::pair<std::string, H5T_class_t>> list_attrs(const File& f,
                                                            hid_t obj);
bool exists(hid_t loc, const std::string& name);
Handle open_group(const File& f, hid_t loc, const std::string& name);

/// The path of every dataset under `group`, relative to it ("a/b/W").
std::vector<std::string> list_datasets(const File& f, hid_t group);

}  // namespace mg::h5
