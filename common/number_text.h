// Numbers as text that reads back as the same double ("0.1" stays "0.1", not
// "0.10000000000000001"), for files a person reads and a program parses back (configs).
#pragma once

#include <string>

namespace citeforge {

std::string number_text(double value);

}  // namespace citeforge
