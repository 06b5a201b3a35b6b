// Test support for ONNX import and export: the test models of tests/data/onnx (made by
// make_models.py with python3-onnx) and their numpy reference tensors, stored as JSON.
#ifndef TENSAT_TESTS_ONNX_TEST_DATA_H
#define TENSAT_TESTS_ONNX_TEST_DATA_H

#include <catch2/catch.hpp>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include <tensat/exec/executor.h>

namespace onnx_test_data {

/// The folder of the test models (with a trailing '/').
inline const std::string kData = std::string(TENSAT_SOURCE_DIR) + "/tests/data/onnx/";

/// The whole file at `path`; the test fails if it cannot be read.
inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// A reference tensor {"dims": [...], "data": [...]} (data row-major, as many as the dims say).
inline tensat::tensor::HostTensor tensor_from_json(const nlohmann::json& j) {
  tensat::tensor::Dims dims;
  for (const auto& d : j.at("dims")) dims.push_back(d.get<std::int64_t>());
  tensat::tensor::HostTensor t(dims);
  const auto& data = j.at("data");
  REQUIRE(data.size() == t.data.size());
  for (std::size_t i = 0; i < t.data.size(); ++i) t.data[i] = data[i].get<float>();
  return t;
}

}  // namespace onnx_test_data

#endif  // TENSAT_TESTS_ONNX_TEST_DATA_H
