#include "models/tokenizer_train.h"

#include <sentencepiece_trainer.h>

#include <filesystem>

#include "common/error.h"
#include "common/file_io.h"

namespace citeforge::models {
namespace {

struct VectorIterator : sentencepiece::SentenceIterator {
  explicit VectorIterator(const std::vector<std::string>& s) : sentences(s) {}
  bool done() const override { return index >= sentences.size(); }
  void Next() override { ++index; }
  const std::string& value() const override { return sentences[index]; }
  sentencepiece::util::Status status() const override { return {}; }
  const std::vector<std::string>& sentences;
  std::size_t index = 0;
};

}  // namespace

void train_tokenizer(const std::vector<std::string>& sentences, int64_t vocab_size,
                     const std::string& path) {
  if (sentences.empty()) throw Error(path + ": no text to train a tokenizer on");
  if (vocab_size < 260)
    throw Error(path + ": tokenizer vocab_size must be >= 260 (bytes + specials)");
  namespace fs = std::filesystem;
  const fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  const std::string prefix = path + ".training";
  // One thread keeps the trained model byte-identical across machines.
  const std::string options = "--model_type=bpe --vocab_size=" + std::to_string(vocab_size) +
                              " --character_coverage=1.0 --byte_fallback=true --split_digits=true"
                              " --unk_id=0 --bos_id=1 --eos_id=2 --pad_id=-1 --num_threads=1"
                              " --max_sentence_length=8192 --minloglevel=2 --model_prefix=" +
                              prefix;
  VectorIterator it(sentences);
  auto status = sentencepiece::SentencePieceTrainer::Train(options, &it);
  if (!status.ok()) throw Error(path + ": SentencePiece training failed: " + status.ToString());
  fs::remove(prefix + ".vocab");
  write_file_atomically(path, read_file(prefix + ".model"));
  fs::remove(prefix + ".model");
}

}  // namespace citeforge::models
