// libFuzzer target for the SynSciQA instruction parser and the CSV reader it is fed by. Any
// input must either parse with the documented guarantees or throw citeforge::Error; anything
// else (a crash, another exception, a broken invariant) aborts.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/error.h"
#include "data/csv.h"
#include "data/synsciqa.h"

using namespace citeforge;

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(bytes), size);
  try {
    data::ParsedInstruction parsed = data::parse_synsciqa_instruction(text);
    require(!parsed.sources.empty());
    require(!parsed.question.empty());
    for (const auto& s : parsed.sources) {
      require(!s.name.empty());
      require(s.name.find('\n') == std::string::npos);
    }
  } catch (const Error&) {
  }
  try {
    data::CsvTable table = data::parse_csv(text, "fuzz.csv");
    for (const auto& record : table.records) {
      require(record.fields.size() == table.header.size());
      require(record.line >= 2);
    }
  } catch (const Error&) {
  }
  return 0;
}
