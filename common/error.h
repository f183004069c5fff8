// The one exception type of citeforge. Its message names where the problem is (file, line or
// record, field) so the CLI can print it as a single line and exit non-zero.
#pragma once

#include <stdexcept>
#include <string>

namespace citeforge {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// "FILE: WHERE: WHAT", skipping empty parts; WHERE is e.g. "line 12" or "tensor 'lm_head.weight'".
std::string located(const std::string& file, const std::string& where, const std::string& what);

// Throws Error(located(file, where, what)).
[[noreturn]] void fail_at(const std::string& file, const std::string& where,
                          const std::string& what);

}  // namespace citeforge
