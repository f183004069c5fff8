// citeforge: fine-tune open-weight LLMs to cite their sources. See README.md.
#include <c10/util/Exception.h>

#include <cstdio>
#include <exception>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/error.h"
#include "trainer/cli/commands.h"

namespace {

using namespace citeforge::trainer;

struct Command {
  std::function<int(const Args&)> run;
  const char* summary;
  const char* usage;  // printed by `citeforge COMMAND --help`
};

const std::map<std::string, Command>& commands() {
  static const std::map<std::string, Command> table = {
      {"generate",
       {command_generate, "decode a continuation with a model (and adapter)",
        "citeforge generate --model DIR|FILE.gguf [--adapter DIR] (--prompt TEXT | --prompt-file "
        "F)\n"
        "    [--tokenizer F] [--chat llama2|mistral|zephyr|plain|chatml|smollm2 [--system TEXT]]\n"
        "    [--max-new-tokens N] [--greedy | --temperature T --top-p P --seed S] [--stop S]...\n"
        "    [--device cpu|cuda] [--logits-out F.safetensors]"}},
      {"score",
       {command_score, "score answers' citations against an example file",
        "citeforge score --data examples.jsonl (--reference NAME | --answers answers.jsonl)\n"
        "    [--out DIR]"}},
      {"fix-citations",
       {command_fix_citations, "correct answers' citations after generation (CiteFix)",
        "citeforge fix-citations --data examples.jsonl (--reference NAME | --answers "
        "answers.jsonl)\n"
        "    --out fixed.jsonl [--method keyword|keyword_bm25|bertscore|attention|ask_model]\n"
        "    [--bm25-weight W] [--model DIR|FILE.gguf [--adapter DIR] --chat FORMAT\n"
        "    --template NAME|FILE [--templates DIR] [--ask-template NAME|FILE] [--layer N]\n"
        "    [--dtype float32|bfloat16]]"}},
      {"evaluate-retriever",
       {command_evaluate_retriever,
        "judge a retriever by its passages and by the answers they lead to (LLM-retEval)",
        "citeforge evaluate-retriever --data examples.jsonl [--corpus passages.jsonl] [--k N]\n"
        "    [--out DIR] [--model DIR|FILE.gguf [--adapter DIR] --chat FORMAT\n"
        "    --template NAME|FILE [--templates DIR] [--reference NAME]\n"
        "    [--judge-template NAME|FILE] [--limit N] [--max-new-tokens N] [--batch-size N]\n"
        "    [--dtype float32|bfloat16] [--seed S]]"}},
      {"judge-attributability",
       {command_judge_attributability,
        "the share of answer sentences their cited sources support, a model judging",
        "citeforge judge-attributability --data examples.jsonl (--reference NAME | --answers "
        "answers.jsonl)\n"
        "    --model DIR|FILE.gguf [--adapter DIR] --chat FORMAT [--judge-template NAME|FILE]\n"
        "    (--threshold T | --calibrate labelled.jsonl --calibrate-reference NAME)\n"
        "    [--limit N] [--out DIR] [--dtype float32|bfloat16] [--seed S]"}},
      {"run",
       {command_run, "run a config's whole pipeline (train, evaluate, select, tables)",
        "citeforge run CONFIG.yaml [--out RUN_DIR] [--set key.path=value ...]"}},
      {"data",
       {command_data, "import, synthesise, inspect and render example files",
        "citeforge data import synsciqa|rage|jsonl ... --out F.jsonl\n"
        "citeforge data synth [--seed S] --out DIR [--config FILE.yaml]\n"
        "citeforge data stats FILE.jsonl [--json]\n"
        "citeforge data render FILE.jsonl [--template NAME|FILE] [--templates DIR] [--id ID]\n"
        "    [--limit N]\n"
        "(citeforge data IMPORTER prints the importer's options)"}},
      {"tables",
       {command_tables, "rebuild the papers' tables and plots of run directories",
        "citeforge tables RUN_DIR... [--metric M] [--validation TEST_SET] [--out DIR]\n"
        "    [--no-plots]\n"
        "(without --out each run's tables are rewritten in place; with --out the runs are\n"
        "only read and everything goes to DIR/<run name>/ and DIR/tables.md)"}},
      {"export",
       {command_export, "export a checkpoint's adapter (peft) or a merged model",
        "citeforge export --checkpoint DIR --format peft|merged --out DIR [--model BASE_DIR]"}},
      {"import",
       {command_import, "import a GGUF checkpoint as an HF-layout model directory",
        "citeforge import gguf FILE.gguf --out DIR"}},
      {"tokenize",
       {command_tokenize, "print the token ids of each line of standard input",
        "citeforge tokenize (--model DIR|FILE.gguf | --tokenizer FILE) [--no-parse-special]\n"
        "    [--pieces]"}},
      {"launch",
       {command_launch, "start N local ranks of a distributed command (like torchrun)",
        "citeforge launch --nproc N [--master-addr ADDR] [--master-port PORT] [--grace S] --\n"
        "    COMMAND [ARGS...]   (e.g. citeforge launch --nproc 3 -- run CONFIG.yaml)"}},
  };
  return table;
}

void print_usage() {
  std::fprintf(stderr, "usage: citeforge COMMAND [options]\n\ncommands:\n");
  for (const auto& [name, command] : commands())
    std::fprintf(stderr, "  %-10s %s\n", name.c_str(), command.summary);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  auto it = commands().find(argv[1]);
  if (it == commands().end()) {
    std::fprintf(stderr, "citeforge: unknown command '%s'\n", argv[1]);
    print_usage();
    return 2;
  }
  const Args args(argv + 2, argv + argc);
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::printf("usage: %s\n", it->second.usage);
    return 0;
  }
  try {
    return it->second.run(args);
  } catch (const citeforge::Error& e) {
    std::fprintf(stderr, "citeforge %s: error: %s\n", argv[1], e.what());
  } catch (const c10::Error& e) {
    // LibTorch's message without its C++ stack trace, on one line.
    std::string message = e.what_without_backtrace();
    for (auto& c : message)
      if (c == '\n') c = ' ';
    std::fprintf(stderr, "citeforge %s: internal error: %s\n", argv[1], message.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "citeforge %s: internal error: %s\n", argv[1], e.what());
  }
  return 1;
}
