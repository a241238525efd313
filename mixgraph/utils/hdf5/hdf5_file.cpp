#include <mixgraph/utils/hdf5/hdf5_file.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>

namespace mg::h5 {

namespace {

// HDF5 prints its error stack to stderr by default; we report our own.
void silence_hdf5() {
  static const bool once = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)once;
}

void fsync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

std::string parent_dir(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

Handle& Handle::operator=(Handle&& o) noexcept {
  if (this != &o) {
    if (id_ >= 0 && close_) close_(id_);
    id_ = o.id_;
    close_ = o.close_;
    o.id_ = -1;
  }
  return *this;
}

Handle::~Handle() {
  if (id_ >= 0 && close_) close_(id_);
}

namespace {

std::string where(const std::string& tag, const std::string& file,
                  const std::string& entry) {
  std::string msg = "[" + tag + "] '" + file + "'";
  if (!entry.empty()) msg += ", entry '" + entry + "'";
  return msg + ": ";
}

}  // namespace

void fail(const std::string& tag, const std::string& file,
          const std::string& entry, const std::string& what) {
  throw std::invalid_argument(msg(where(tag, file, entry), what));
}

void fail_write(const std::string& tag, const std::string& file,
                const std::string& entry, const std::string& what) {
  throw std::runtime_error(msg(where(tag, file, entry), what));
}

File open_for_read(const std::string& path, const std::string& tag) {
  silence_hdf5();
  if (::access(path.c_str(), R_OK) != 0) {
    fail(tag, path, "", "cannot be read (missing or no permission)");
  }
  const htri_t is_h5 = H5Fis_hdf5(path.c_str());
  if (is_h5 <= 0) {
    fail(tag, path, "", "is not an HDF5 file, or it is truncated");
  }
  hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (id < 0) fail(tag, path, "", "cannot be opened as HDF5 (truncated?)");
  return File{Handle(id, H5Fclose), path, tag};
}

void write_atomically(const std::string& path, const std::string& tag,
                      const std::function<void(File&)>& write) {
  silence_hdf5();
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    // The 1.10 file format: object headers, groups' link storage and the
    // superblock carry checksums, and a chunked dataset's single chunk is
    // indexed from its (checksummed) header. h5py reads it (HDF5 >= 1.10).
    Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V110, H5F_LIBVER_LATEST);
    hid_t id = H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get());
    if (id < 0) {
      fail_write(tag, path, "",
                 "cannot create the temporary file '" + tmp +
                     "' beside it (does the directory exist?)");
    }
    File f{Handle(id, H5Fclose), path, tag};
    try {
      write(f);
      if (H5Fflush(f.handle.get(), H5F_SCOPE_GLOBAL) < 0) {
        fail_write(tag, path, "", "flushing the temporary file failed");
      }
    } catch (...) {
      f.handle = Handle();
      std::remove(tmp.c_str());
      throw;
    }
  }  // closed here
  fsync_path(tmp, O_RDONLY);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    fail_write(tag, path, "", "renaming the temporary file over it failed");
  }
  fsync_path(parent_dir(path), O_RDONLY | O_DIRECTORY);
}

Handle file_type(Dtype dtype) {
  hid_t t = -1;
  switch (dtype) {
    case Dtype::f32:
      t = H5Tcopy(H5T_IEEE_F32LE);
      break;
    case Dtype::f64:
      t = H5Tcopy(H5T_IEEE_F64LE);
      break;
    case Dtype::i32:
      t = H5Tcopy(H5T_STD_I32LE);
      break;
    case Dtype::i64:
      t = H5Tcopy(H5T_STD_I64LE);
      break;
    case Dtype::u8:
      t = H5Tcopy(H5T_STD_U8LE);
      break;
    case Dtype::b8:
      t = H5Tcopy(H5T_STD_U8LE);
      break;
    case Dtype::f16:
    case Dtype::bf16: {
      // binary16: sign bit 15, exponent bits 10-14 (bias 15), mantissa 0-9.
      // bfloat16: sign bit 15, exponent bits 7-14 (bias 127), mantissa 0-6.
      const bool half = dtype == Dtype::f16;
      t = H5Tcopy(H5T_IEEE_F32LE);
      H5Tset_fields(t, 15, half ? 10 : 7, half ? 5 : 8, 0, half ? 10 : 7);
      H5Tset_size(t, 2);
      H5Tset_ebias(t, half ? 15 : 127);
      break;
    }
  }
  return Handle(t, H5Tclose);
}

Dtype dtype_of_type(hid_t type, const File& f, const std::string& entry) {
  const H5T_class_t cls = H5Tget_class(type);
  const size_t size = H5Tget_size(type);
  if (cls == H5T_FLOAT) {
    if (size == 4) return Dtype::f32;
    if (size == 8) return Dtype::f64;
    if (size == 2) {
      size_t spos, epos, esize, mpos, msize;
      H5Tget_fields(type, &spos, &epos, &esize, &mpos, &msize);
      return esize == 8 ? Dtype::bf16 : Dtype::f16;
    }
  } else if (cls == H5T_INTEGER) {
    const bool is_signed = H5Tget_sign(type) == H5T_SGN_2;
    if (size == 4 && is_signed) return Dtype::i32;
    if (size == 8 && is_signed) return Dtype::i64;
    if (size == 1 && !is_signed) return Dtype::u8;
  }
  fail(f.tag, f.path, entry,
       "has an element type mixgraph does not read (class " +
           std::to_string(static_cast<int>(cls)) + ", " + std::to_string(size) +
           " bytes)");
}

Handle create_group(hid_t parent, const std::string& name) {
  if (H5Lexists(parent, name.c_str(), H5P_DEFAULT) > 0) {
    return Handle(H5Gopen2(parent, name.c_str(), H5P_DEFAULT), H5Gclose);
  }
  return Handle(
      H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      H5Gclose);
}

Handle ensure_parent_groups(hid_t root, const std::string& name) {
  Handle current(H5Gopen2(root, ".", H5P_DEFAULT), H5Gclose);
  size_t start = 0;
  for (size_t slash; (slash = name.find('/', start)) != std::string::npos;
       start = slash + 1) {
    current = create_group(current.get(), name.substr(start, slash - start));
  }
  return current;
}

namespace {

// Every dataset is checked on read. An array is chunked with the Fletcher32
// filter (a checksum per chunk, verified by H5Dread); chunks stay under
// 64 MiB by splitting the leading dimensions. A scalar or an empty array is
// compact: its bytes live in the object header, whose checksum covers them.
Handle checksummed_layout(const Shape& shape, Dtype dtype) {
  Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  if (shape.empty() || shape_size(shape) == 0) {
    H5Pset_layout(dcpl.get(), H5D_COMPACT);
    return dcpl;
  }
  std::vector<hsize_t> chunk(shape.begin(), shape.end());
  const hsize_t limit = hsize_t{64} << 20;
  auto bytes = [&] {
    hsize_t b = dtype_size(dtype);
    for (hsize_t c : chunk) b *= c;
    return b;
  };
  for (size_t d = 0; d < chunk.size() && bytes() > limit; ++d) {
    while (chunk[d] > 1 && bytes() > limit) chunk[d] = (chunk[d] + 1) / 2;
  }
  H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data());
  H5Pset_fletcher32(dcpl.get());
  return dcpl;
}

// "solver/fc1/W/m": the dataset's path in the file, for errors.
std::string path_in_file(hid_t loc, const std::string& name) {
  char buf[1024];
  const ssize_t n = H5Iget_name(loc, buf, sizeof buf);
  std::string base = n > 0
                         ? std::string(buf, std::min<size_t>(n, sizeof buf - 1))
                         : std::string();
  while (!base.empty() && base.front() == '/') base.erase(0, 1);
  return base.empty() ? name : base + "/" + name;
}

}  // namespace

void write_dataset(File& f, hid_t loc, const std::string& name,
                   const Shape& shape, Dtype dtype, const void* data) {
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  Handle space(
      H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
      H5Sclose);
  if (shape.empty()) space = Handle(H5Screate(H5S_SCALAR), H5Sclose);
  Handle type = file_type(dtype);
  Handle dcpl = checksummed_layout(shape, dtype);
  Handle ds(H5Dcreate2(loc, name.c_str(), type.get(), space.get(), H5P_DEFAULT,
                       dcpl.get(), H5P_DEFAULT),
            H5Dclose);
  if (!ds.valid()) fail_write(f.tag, f.path, name, "cannot create the dataset");
  if (shape_size(shape) > 0 &&
      H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
    fail_write(f.tag, f.path, name, "writing the dataset failed (disk full?)");
  }
}

namespace {

template <class T>
void write_attr(File& f, hid_t obj, const std::string& name, hid_t type, T v) {
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle a(H5Acreate2(obj, name.c_str(), type, space.get(), H5P_DEFAULT,
                      H5P_DEFAULT),
           H5Aclose);
  if (!a.valid() || H5Awrite(a.get(), type, &v) < 0) {
    fail_write(f.tag, f.path, name, "cannot write the attribute");
  }
}

}  // namespace

void write_int_attr(File& f, hid_t obj, const std::string& name, int64_t v) {
  write_attr(f, obj, name, H5T_NATIVE_INT64, v);
}

void write_double_attr(File& f, hid_t obj, const std::string& name, double v) {
  write_attr(f, obj, name, H5T_NATIVE_DOUBLE, v);
}

void write_string_attr(File& f, hid_t obj, const std::string& name,
                       const std::string& v) {
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), v.empty() ? 1 : v.size());
  H5Tset_strpad(type.get(), H5T_STR_NULLPAD);
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle a(H5Acreate2(obj, name.c_str(), type.get(), space.get(), H5P_DEFAULT,
                      H5P_DEFAULT),
           H5Aclose);
  std::string padded = v.empty() ? std::string(1, '\0') : v;
  if (!a.valid() || H5Awrite(a.get(), type.get(), padded.data()) < 0) {
    fail_write(f.tag, f.path, name, "cannot write the attribute");
  }
}

std::string read_string_attr(const File& f, hid_t obj, const std::string& entry,
                             const std::string& name) {
  if (H5Aexists(obj, name.c_str()) <= 0) return "";
  Handle a(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose);
  Handle type(H5Aget_type(a.get()), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_STRING ||
      H5Tis_variable_str(type.get()) > 0) {
    fail(f.tag, f.path, entry,
         "attribute '" + name + "' must be a fixed-length string");
  }
  const size_t size = H5Tget_size(type.get());
  if (size == 0 || size > (1u << 20)) {
    fail(f.tag, f.path, entry, "attribute '" + name + "' has a bad size");
  }
  std::string v(size, '\0');
  if (H5Aread(a.get(), type.get(), v.data()) < 0) {
    fail(f.tag, f.path, entry, "cannot read the attribute '" + name + "'");
  }
  v.resize(std::strlen(v.c_str()));
  return v;
}

DatasetInfo dataset_info(const File& f, hid_t loc, const std::string& name) {
  if (!exists(loc, name))
    fail(f.tag, f.path, path_in_file(loc, name), "is missing");
  Handle ds(H5Dopen2(loc, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) {
    fail(f.tag, f.path, path_in_file(loc, name),
         "is not a dataset, or its header is damaged");
  }
  Handle type(H5Dget_type(ds.get()), H5Tclose);
  Handle space(H5Dget_space(ds.get()), H5Sclose);
  const int nd = H5Sget_simple_extent_ndims(space.get());
  if (nd < 0) fail(f.tag, f.path, name, "has an unreadable shape");
  std::vector<hsize_t> dims(nd);
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  DatasetInfo info;
  info.shape.assign(dims.begin(), dims.end());
  info.dtype = dtype_of_type(type.get(), f, name);
  return info;
}

void read_dataset(const File& f, hid_t loc, const std::string& name,
                  Dtype dtype, void* out, int64_t n) {
  const std::string entry = path_in_file(loc, name);
  Handle ds(H5Dopen2(loc, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) fail(f.tag, f.path, entry, "is missing or not a dataset");
  Handle space(H5Dget_space(ds.get()), H5Sclose);
  const hssize_t stored = H5Sget_simple_extent_npoints(space.get());
  if (stored != n) {
    fail(f.tag, f.path, entry,
         "holds " + std::to_string(stored) + " values, " + std::to_string(n) +
             " were expected");
  }
  if (n == 0) return;
  Handle type = file_type(dtype);
  if (H5Dread(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0) {
    Handle dcpl(H5Dget_create_plist(ds.get()), H5Pclose);
    unsigned flags = 0, config = 0;
    size_t nvalues = 0;
    const bool checked =
        dcpl.valid() &&
        H5Pget_filter_by_id2(dcpl.get(), H5Z_FILTER_FLETCHER32, &flags,
                             &nvalues, nullptr, 0, nullptr, &config) >= 0;
    fail(f.tag, f.path, entry,
         checked ? "its checksum does not match: the file is damaged (or "
                   "truncated)"
                 : "reading the data failed: the file is damaged or "
                   "truncated");
  }
}

namespace {

Handle open_attr(const File& f, hid_t obj, const std::string& entry,
                 const std::string& name, H5T_class_t expected) {
  if (H5Aexists(obj, name.c_str()) <= 0) {
    fail(f.tag, f.path, entry, "lacks the attribute '" + name + "'");
  }
  Handle a(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose);
  Handle type(H5Aget_type(a.get()), H5Tclose);
  if (H5Tget_class(type.get()) != expected) {
    fail(f.tag, f.path, entry,
         "attribute '" + name + "' must be " +
             (expected == H5T_INTEGER ? "an integer" : "a number"));
  }
  return a;
}

}  // namespace

int64_t read_int_attr(const File& f, hid_t obj, const std::string& entry,
                      const std::string& name) {
  Handle a = open_attr(f, obj, entry, name, H5T_INTEGER);
  int64_t v = 0;
  if (H5Aread(a.get(), H5T_NATIVE_INT64, &v) < 0) {
    fail(f.tag, f.path, entry, "cannot read the attribute '" + name + "'");
  }
  return v;
}

bool read_bool_attr(const File& f, hid_t obj, const std::string& entry,
                    const std::string& name) {
  if (H5Aexists(obj, name.c_str()) <= 0) {
    fail(f.tag, f.path, entry, "lacks the attribute '" + name + "'");
  }
  Handle a(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose);
  Handle type(H5Aget_type(a.get()), H5Tclose);
  const H5T_class_t cls = H5Tget_class(type.get());
  if (cls == H5T_INTEGER) return read_int_attr(f, obj, entry, name) != 0;
  // h5py writes numpy's bool (NNabla's need_grad) as an enum FALSE = 0,
  // TRUE = 1 over a small integer: read its integer value.
  if (cls == H5T_ENUM) {
    Handle base(H5Tget_super(type.get()), H5Tclose);
    const size_t size = H5Tget_size(type.get());
    Handle native(H5Tget_native_type(type.get(), H5T_DIR_ASCEND), H5Tclose);
    unsigned char bytes[8] = {};
    if (base.valid() && size >= 1 && size <= 8 &&
        H5Aread(a.get(), native.get(), bytes) >= 0) {
      bool nonzero = false;
      for (size_t i = 0; i < size; ++i) nonzero = nonzero || bytes[i] != 0;
      return nonzero;
    }
    fail(f.tag, f.path, entry, "cannot read the attribute '" + name + "'");
  }
  fail(f.tag, f.path, entry,
       "attribute '" + name + "' must be a bool or an integer");
}

double read_double_attr(const File& f, hid_t obj, const std::string& entry,
                        const std::string& name) {
  Handle a = open_attr(f, obj, entry, name, H5T_FLOAT);
  double v = 0;
  if (H5Aread(a.get(), H5T_NATIVE_DOUBLE, &v) < 0) {
    fail(f.tag, f.path, entry, "cannot read the attribute '" + name + "'");
  }
  return v;
}

bool has_attr(hid_t obj, const std::string& name) {
  return H5Aexists(obj, name.c_str()) > 0;
}

namespace {

herr_t collect_attr(hid_t obj, const char* name, const H5A_info_t*,
                    void* data) {
  auto* out =
      static_cast<std::vector<std::pair<std::string, H5T_class_t>>*>(data);
  Handle a(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
  Handle type(a.valid() ? H5Aget_type(a.get()) : -1, H5Tclose);
  out->emplace_back(name,
                    type.valid() ? H5Tget_class(type.get()) : H5T_NO_CLASS);
  return 0;
}

}  // namespace

std::vector<std::pair<std::string, H5T_class_t>> list_attrs(const File& f,
                                                            hid_t obj) {
  std::vector<std::pair<std::string, H5T_class_t>> out;
  hsize_t idx = 0;
  if (H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &idx, collect_attr, &out) <
      0) {
    fail(f.tag, f.path, "", "cannot list attributes (file damaged?)");
  }
  return out;
}

bool exists(hid_t loc, const std::string& name) {
  // H5Lexists needs every intermediate group to exist: walk them.
  size_t start = 0;
  while (true) {
    const size_t slash = name.find('/', start);
    const std::string prefix = name.substr(0, slash);
    if (H5Lexists(loc, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    if (slash == std::string::npos) return true;
    start = slash + 1;
  }
}

Handle open_group(const File& f, hid_t loc, const std::string& name) {
  if (!exists(loc, name)) fail(f.tag, f.path, name, "is missing");
  Handle g(H5Gopen2(loc, name.c_str(), H5P_DEFAULT), H5Gclose);
  if (!g.valid()) fail(f.tag, f.path, name, "is not a group");
  return g;
}

namespace {

herr_t collect_dataset(hid_t group, const char* name, const H5L_info_t*,
                       void* data) {
  H5O_info_t info;
  if (H5Oget_info_by_name(group, name, &info, H5P_DEFAULT) >= 0 &&
      info.type == H5O_TYPE_DATASET) {
    static_cast<std::vector<std::string>*>(data)->push_back(name);
  }
  return 0;
}

}  // namespace

std::vector<std::string> list_datasets(const File& f, hid_t group) {
  std::vector<std::string> names;
  if (H5Lvisit(group, H5_INDEX_NAME, H5_ITER_INC, collect_dataset, &names) <
      0) {
    fail(f.tag, f.path, "", "cannot list its contents (file truncated?)");
  }
  return names;
}

}  // namespace mg::h5
