// Reading a whole input file, with an error that says why it cannot be read (missing, a
// directory, a read error) rather than handing an empty text to a parser.
#ifndef TENSAT_IO_FILE_H
#define TENSAT_IO_FILE_H

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include "tensat/core/error.h"

namespace tensat {
inline namespace v0 {

/// A file that cannot be read. `path()` names it, `reason()` says why ("is a directory",
/// "cannot open the file: No such file or directory", ...).
class FileError : public Error {
 public:
  FileError(std::string path, std::string reason)
      : Error(fmt::format("{}: {}", path, reason)),
        path_(std::move(path)),
        reason_(std::move(reason)) {}

  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] const std::string& reason() const noexcept { return reason_; }

 private:
  std::string path_;
  std::string reason_;
};

/// The bytes of the file at `path`. Throws `FileError` if it is a directory, cannot be opened or
/// fails while being read; never a standard-library exception (libstdc++'s filebuf throws
/// `std::ios_base::failure` from a failed read, e.g. of a directory, which `read` turns into
/// `badbit` here).
[[nodiscard]] inline std::string read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw FileError(path, "is a directory, not a file");
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    throw FileError(path, error ? fmt::format("cannot open the file: {}",
                                              std::generic_category().message(error))
                                : std::string("cannot open the file"));
  }
  std::string text;
  char buffer[1 << 16];
  while (in) {
    in.read(buffer, sizeof buffer);
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) throw FileError(path, "cannot read the file");
  return text;
}

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_IO_FILE_H
