// citeforge import gguf FILE --out DIR: a GGUF checkpoint as an HF-layout model directory.
#include <cstdio>

#include "common/error.h"
#include "models/gguf_import.h"
#include "trainer/cli/cli_args.h"
#include "trainer/cli/cli_model.h"
#include "trainer/cli/commands.h"

namespace citeforge::trainer {

const CliCommand& import_cli() {
  static const CliCommand command{
      "import",
      "import a GGUF checkpoint as an HF-layout model directory",
      "gguf FILE.gguf",
      "",
      {{"out", "DIR", "the model directory to write (required)"},
       {"dtype", one_of({"source", "float32", "bfloat16"}),
        "the written weights' type: source keeps F32/F16/BF16 tensors' own and writes quantised "
        "ones in bf16; float32 writes the exact dequantised values",
        "source"},
       non_finite_weights_option()}};
  return command;
}

int command_import(const Args& raw) {
  auto args = parse_cli(import_cli(), raw);
  if (args.positional.size() != 2 || args.positional[0] != "gguf")
    throw Error("import: expected 'gguf FILE.gguf' (citeforge import --help shows the usage)");
  models::import_gguf(
      args.positional[1], args.require("out"),
      [](const std::string& line) { std::fprintf(stderr, "[import] %s\n", line.c_str()); },
      non_finite_weights(args, "import"),
      models::import_dtype_by_name(args.require("dtype"), "import: --dtype"));
  return 0;
}

}  // namespace citeforge::trainer
