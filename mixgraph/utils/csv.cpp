#include <mixgraph/utils/csv.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>

namespace mg {

namespace {

std::string join(const std::vector<std::string>& cells) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (i) line += ',';
    line += cells[i];
  }
  return line;
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) cells.push_back(cell);
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}

[[noreturn]] void io_error(const std::string& tag, const std::string& path,
                           const std::string& what) {
  throw std::runtime_error(
      msg("[", tag, "] ", path, ": ", what, ": ", std::strerror(errno)));
}

}  // namespace

CsvWriter::CsvWriter(const std::string& path, std::vector<std::string> columns,
                     bool append)
    : path_(path), columns_(std::move(columns)) {
  bool continuing = false;
  if (append) {
    std::ifstream in(path);
    std::string header;
    if (in && std::getline(in, header)) {
      if (header != join(columns_)) {
        throw std::invalid_argument(msg("[CsvWriter] ", path, ": its header \"",
                                        header, "\" is not \"", join(columns_),
                                        "\", so it cannot be continued"));
      }
      continuing = true;
    }
  }
  file_ = std::fopen(path.c_str(), continuing ? "a" : "w");
  if (!file_) io_error("CsvWriter", path, "cannot open for writing");
  if (!continuing) write_row(columns_);
}

CsvWriter::~CsvWriter() {
  if (file_) std::fclose(file_);
}

void CsvWriter::write_row(const std::vector<std::string>& cells) {
  if (cells.size() != columns_.size()) {
    throw std::invalid_argument(
        msg("[CsvWriter] ", path_, ": a row has ", cells.size(),
            " values, but the header has ", columns_.size(), " columns"));
  }
  const std::string line = join(cells) + "\n";
  if (std::fputs(line.c_str(), file_) < 0 || std::fflush(file_) != 0) {
    io_error("CsvWriter", path_, "cannot write");
  }
}

std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw std::invalid_argument(
        msg("[read_csv] ", path, ": cannot open: ", std::strerror(errno)));
  }
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) rows.push_back(split(line));
  return rows;
}

void truncate_csv_rows(const std::string& path, double last) {
  std::ifstream in(path);
  if (!in) return;
  std::string kept, line;
  bool header = true;
  while (std::getline(in, line)) {
    if (!header) {
      char* end = nullptr;
      const double key = std::strtod(line.c_str(), &end);
      if (end == line.c_str() || key > last) continue;
    }
    kept += line + "\n";
    header = false;
  }
  in.close();
  std::ofstream out(path, std::ios::trunc);
  if (!(out << kept)) io_error("truncate_csv_rows", path, "cannot rewrite");
}

}  // namespace mg
