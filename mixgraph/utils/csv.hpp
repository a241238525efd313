// Small CSV files: training curves written row by row, read back by tests.
#pragma once

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace mg {

/// Writes a CSV file with a header row, one row per call, flushed as it
/// goes so a killed run leaves every finished row.
class CsvWriter {
 public:
  /// Creates `path` with the header `columns`; with append, an existing file
  /// whose header equals `columns` is continued instead (a resumed run).
  CsvWriter(const std::string& path, std::vector<std::string> columns,
            bool append = false);
  ~CsvWriter();
  CsvWriter(const CsvWriter&) = delete;
  CsvWriter& operator=(const CsvWriter&) = delete;

  /// One row: as many values as columns, numbers printed so that they read
  /// back exactly.
  template <class... T>
  void row(const T&... values) {
    std::vector<std::string> cells;
    (cells.push_back(cell(values)), ...);
    write_row(cells);
  }
  void write_row(const std::vector<std::string>& cells);
  const std::string& path() const { return path_; }

 private:
  template <class T>
  static std::string cell(const T& v) {
    std::ostringstream s;
    s.precision(9);
    s << v;
    return s.str();
  }
  std::string path_;
  std::vector<std::string> columns_;
  std::FILE* file_ = nullptr;
};

/// Every row of a CSV file (the header first), split at commas.
std::vector<std::vector<std::string>> read_csv(const std::string& path);

/// Keeps the header and the rows whose first column, read as a number, is
/// at most `last`: a run resumed from step `last` rewrites what came after.
/// A missing file is left missing.
void truncate_csv_rows(const std::string& path, double last);

}  // namespace mg
