// libFuzzer target for tokenizer.json: any bytes are written as a tokenizer.json and read as a
// byte-level BPE tokenizer. A defect must be a citeforge::Error; a tokenizer that reads must
// encode text into ids inside its vocabulary and decode any ids without failing. A broken
// promise aborts, which the fuzzer reports like a crash.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/error.h"
#include "models/bpe_tokenizer.h"
#include "tests/fuzz/fuzz_support.h"

using namespace citeforge;

using fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path =
      fuzz::input_file("tokenizer.json", reinterpret_cast<const char*>(data), size);
  try {
    models::BpeTokenizer tokenizer(models::read_tokenizer_json(path), path);
    const auto n = tokenizer.vocab_size();
    int64_t bound = n;
    for (const auto& added : tokenizer.vocabulary().added)
      bound = std::max<int64_t>(bound, added.id + 1);
    for (const char* text : {"The answer [1].", " thé 12 ü\xf0\x9f\x98\x80<|im_end|>", ""}) {
      for (bool special : {true, false}) {
        const auto ids = tokenizer.encode(text, special);
        for (auto id : ids) require(id >= 0 && id < bound);
        tokenizer.decode(ids);
      }
    }
    tokenizer.decode({-1, 0, n, n + 5, 1 << 30});
  } catch (const Error&) {
  }
  return 0;
}
