// read_file: bytes as they are, and a FileError that says why a path cannot be read.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <tensat/io/file.h>

namespace fs = std::filesystem;

TEST_CASE("file: read_file returns every byte, an empty file as empty text") {
  const fs::path path = fs::temp_directory_path() / "tensat_file_test.bin";
  std::string bytes;
  for (std::size_t i = 0; i < 200000; ++i)
    bytes += static_cast<char>(i * 7 % 256);  // NULs, > one buffer
  std::ofstream(path, std::ios::binary) << bytes;
  CHECK(tensat::read_file(path.string()) == bytes);
  std::ofstream(path, std::ios::binary | std::ios::trunc).close();
  CHECK(tensat::read_file(path.string()).empty());
  fs::remove(path);
}

TEST_CASE("file: a directory or a missing file is a FileError naming it, never a std exception") {
  const fs::path dir = fs::temp_directory_path() / "tensat_file_test_dir";
  fs::create_directories(dir);
  try {
    (void)tensat::read_file(dir.string());
    FAIL("a directory was read");
  } catch (const tensat::FileError& e) {
    CHECK(e.path() == dir.string());
    CHECK(e.reason() == "is a directory, not a file");
    CHECK(std::string(e.what()) == dir.string() + ": is a directory, not a file");
  }
  fs::remove(dir);
  try {
    (void)tensat::read_file("/nonexistent/tensat/file");
    FAIL("a missing file was read");
  } catch (const tensat::FileError& e) {
    CHECK_THAT(e.reason(), Catch::StartsWith("cannot open the file: "));
    CHECK_THAT(e.reason(), Catch::Contains("No such file or directory"));
  }
}
