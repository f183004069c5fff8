// libFuzzer target for the data files a user brings: byte 0 picks the reader (examples JSONL,
// answers JSONL, CSV), the rest is the file. A defect must be a citeforge::Error; what reads
// must keep the readers' promises (examples have unique ids and sources with unique positive
// keys; a CSV's rows have the header's width). A broken promise aborts, which the fuzzer
// reports like a crash.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "common/error.h"
#include "data/answers.h"
#include "data/csv.h"
#include "data/example.h"
#include "tests/fuzz/fuzz_support.h"

using namespace citeforge;

using fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 3) {
      case 0: {
        std::set<std::string> ids;
        const auto path = fuzz::input_file("examples.jsonl", text.data(), text.size());
        for (const auto& example : data::read_examples_jsonl(path)) {
          require(ids.insert(example.id).second);
          std::set<int> keys;
          for (const auto& source : example.sources)
            require(source.key > 0 && keys.insert(source.key).second);
        }
        break;
      }
      case 1: {
        data::read_answers_jsonl(fuzz::input_file("answers.jsonl", text.data(), text.size()));
        break;
      }
      default: {
        const auto table = data::parse_csv(text, "fuzz.csv");
        for (const auto& record : table.records)
          require(record.fields.size() == table.header.size() && record.line > 0);
      }
    }
  } catch (const Error&) {
  }
  return 0;
}
