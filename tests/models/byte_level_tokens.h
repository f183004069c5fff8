// GPT-2's 256 byte-level tokens, written out independently of models/bpe_tokenizer.cpp so tests
// that build byte-level vocabularies do not take the code under test as their reference.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace citeforge::testing {

// In byte order, so byte b has id b: printable Latin-1 bytes stand for themselves, the other 68
// move to U+0100 upwards (space is "Ġ").
inline std::vector<std::string> byte_level_tokens() {
  std::vector<std::string> tokens;
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
    uint32_t cp = printable ? b : next++;
    std::string s;
    if (cp < 0x80)
      s += char(cp);
    else
      s += char(0xC0 | (cp >> 6)), s += char(0x80 | (cp & 0x3F));
    tokens.push_back(s);
  }
  return tokens;
}

}  // namespace citeforge::testing
