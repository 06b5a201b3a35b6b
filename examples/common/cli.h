// What the example command lines share: the bad-input condition (one line on stderr, exit
// status 2) and folding a message onto one line.
#ifndef TENSAT_EXAMPLES_COMMON_CLI_H
#define TENSAT_EXAMPLES_COMMON_CLI_H

#include <string>
#include <string_view>

namespace cli {

/// A bad-input condition: reported as one line on stderr, exit status 2.
struct BadInput {
  std::string reason;
};

/// One line, whatever the message contains (ids, paths and parser messages may hold newlines).
inline std::string one_line(std::string_view text) {
  std::string out;
  for (char ch : text) {
    if (ch == '\n')
      out += "\\n";
    else if (ch == '\r')
      out += "\\r";
    else
      out += ch;
  }
  return out;
}

}  // namespace cli

#endif  // TENSAT_EXAMPLES_COMMON_CLI_H
