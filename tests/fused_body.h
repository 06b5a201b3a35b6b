// Fused-kernel test programs written as a body over placeholders `$k`, shared by the CPU's
// fused-loop test and the CUDA executor's test: the same body becomes `(fused <body> inputs...)`,
// with `$k` as `arg k`, or the unfused program, with `$k` as operand k's input.
#ifndef TENSAT_TESTS_FUSED_BODY_H
#define TENSAT_TESTS_FUSED_BODY_H

#include <string>
#include <vector>

namespace tensat::testing {

struct Operand {
  std::string name;
  std::string dims;  // "3 7 41"
};

inline std::string input_of(const Operand& o, const std::string& dtype = "f32") {
  return "(input " + o.name + " " + dtype + " (ints " + o.dims + "))";
}

/// `body` with `$k` replaced by `arg k` (fused) or by operand k's input (unfused).
inline std::string substitute(std::string body, const std::vector<Operand>& operands, bool as_args,
                              const std::string& dtype = "f32") {
  for (std::size_t k = operands.size(); k-- > 0;) {
    const std::string key = "$" + std::to_string(k);
    const std::string with =
        as_args ? "(arg " + std::to_string(k) + " " + dtype + " (ints " + operands[k].dims + "))"
                : input_of(operands[k], dtype);
    for (std::size_t at = body.find(key); at != std::string::npos;
         at = body.find(key, at + with.size()))
      body.replace(at, key.size(), with);
  }
  return body;
}

/// The fused program's text: `(fused <body over args> <operand inputs>...)`.
inline std::string fused_text(const std::string& body, const std::vector<Operand>& operands,
                              const std::string& dtype = "f32") {
  std::string fused = "(fused " + substitute(body, operands, true, dtype);
  for (const Operand& o : operands) fused += " " + input_of(o, dtype);
  return fused + ")";
}

}  // namespace tensat::testing

#endif  // TENSAT_TESTS_FUSED_BODY_H
