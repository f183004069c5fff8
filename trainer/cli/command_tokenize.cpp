// citeforge tokenize --model DIR: the token ids of each line of standard input, one line of ids
// per input line (like llama.cpp's tokenize tool), for checking a tokenizer by eye or by script.
#include <iostream>
#include <string>

#include "common/error.h"
#include "models/gguf_import.h"
#include "models/tokenizer.h"
#include "trainer/cli/cli_args.h"
#include "trainer/cli/commands.h"

namespace citeforge::trainer {

const CliCommand& tokenize_cli() {
  static const CliCommand command{
      "tokenize",
      "print the token ids of each line of standard input",
      "",
      "Give --model or --tokenizer.",
      {{"model", "DIR|FILE.gguf", "the model whose tokenizer to use"},
       {"tokenizer", "FILE", "a tokenizer.model or tokenizer.json"},
       {"no-parse-special", "", "read special tokens in the text as plain text"},
       {"pieces", "", "print each id's piece beside it"}}};
  return command;
}

int command_tokenize(const Args& raw) {
  auto args = parse_cli(tokenize_cli(), raw);
  args.no_positional();
  if (!args.has("model") && !args.has("tokenizer"))
    throw Error("tokenize: give --model DIR|FILE.gguf or --tokenizer FILE");
  std::string source = args.get_or("tokenizer", args.get_or("model", ""));
  // A .gguf carries its vocabulary; reading it directly avoids importing the weights.
  auto tokenizer =
      models::is_gguf_path(source)
          ? models::Tokenizer(models::gguf_vocabulary(models::read_gguf(source)), source)
          : models::Tokenizer(source);
  const bool parse_special = !args.has("no-parse-special");
  std::string line;
  while (std::getline(std::cin, line)) {
    auto ids = tokenizer.encode(line, false, false, parse_special);
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i) std::cout << ' ';
      std::cout << ids[i];
      if (args.has("pieces")) std::cout << ":'" << tokenizer.piece(ids[i]) << "'";
    }
    std::cout << '\n';
  }
  return 0;
}

}  // namespace citeforge::trainer
