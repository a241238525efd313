#include <mixgraph/utils/nnp/zip_archive.hpp>

#include <zip.h>

#include <cstdio>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>

namespace mg::nnp {

namespace {

std::string zip_error_text(int code) {
  zip_error_t error;
  zip_error_init_with_code(&error, code);
  std::string text = zip_error_strerror(&error);
  zip_error_fini(&error);
  return text;
}

}  // namespace

ZipEntries read_zip(const std::string& path, const std::string& caller) {
  int code = 0;
  zip_t* archive = zip_open(path.c_str(), ZIP_RDONLY, &code);
  if (!archive) {
    std::string why = zip_error_text(code);
    if (code == ZIP_ER_NOENT) why = "no such file";
    if (code == ZIP_ER_NOZIP) why = "not a zip archive (a .nnp is one)";
    throw std::invalid_argument(
        msg("[", caller, "] cannot read '", path, "': ", why));
  }
  ZipEntries entries;
  std::string error;
  const zip_int64_t n = zip_get_num_entries(archive, 0);
  for (zip_int64_t i = 0; i < n && error.empty(); ++i) {
    zip_stat_t st;
    zip_file_t* file = nullptr;
    if (zip_stat_index(archive, i, 0, &st) != 0 ||
        !(file = zip_fopen_index(archive, i, 0))) {
      error = zip_strerror(archive);
      break;
    }
    std::string bytes(static_cast<size_t>(st.size), '\0');
    const zip_int64_t got = zip_fread(file, bytes.data(), st.size);
    if (got < 0 || static_cast<zip_uint64_t>(got) != st.size) {
      error = std::string("entry '") + st.name + "' is damaged";
    }
    zip_fclose(file);
    entries.emplace_back(st.name, std::move(bytes));
  }
  zip_discard(archive);
  if (!error.empty()) {
    throw std::invalid_argument(
        msg("[", caller, "] cannot read '", path, "': ", error));
  }
  return entries;
}

void write_zip(const std::string& path, const ZipEntries& entries,
               const std::string& caller) {
  const std::string tmp = path + ".tmp";
  int code = 0;
  zip_t* archive = zip_open(tmp.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code);
  if (!archive) {
    throw std::runtime_error(
        msg("[", caller, "] cannot write '", tmp, "': ", zip_error_text(code)));
  }
  for (const auto& [name, bytes] : entries) {
    // The bytes stay alive (in `entries`) until zip_close reads them.
    zip_source_t* source =
        zip_source_buffer(archive, bytes.data(), bytes.size(), 0);
    if (!source ||
        zip_file_add(archive, name.c_str(), source, ZIP_FL_ENC_UTF_8) < 0) {
      const std::string why = zip_strerror(archive);
      if (source) zip_source_free(source);
      zip_discard(archive);
      std::remove(tmp.c_str());
      throw std::runtime_error(
          msg("[", caller, "] cannot add '", name, "' to '", tmp, "': ", why));
    }
  }
  if (zip_close(archive) != 0) {
    const std::string why = zip_strerror(archive);
    zip_discard(archive);
    std::remove(tmp.c_str());
    throw std::runtime_error(
        msg("[", caller, "] writing '", tmp, "' failed: ", why));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    throw std::runtime_error(
        msg("[", caller, "] cannot rename '", tmp, "' to '", path, "'"));
  }
}

}  // namespace mg::nnp
