#include "models/gguf_import.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/error.h"
#include "common/file_io.h"
#include "common/work_folder.h"
#include "models/base_card.h"
#include "models/gguf_dequantize.h"
#include "models/model_tensors.h"
#include "models/rope.h"
#include "models/safetensors.h"

namespace citeforge::models {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string arch_key(const GgufFile& file, const std::string& suffix) {
  return file.at("general.architecture").string("general.architecture") + "." + suffix;
}

int64_t positive_key(const GgufFile& file, const std::string& key) {
  int64_t v = file.at(key).integer(key);
  if (v <= 0) fail_at(file.path, "key '" + key + "'", "must be positive, got " + std::to_string(v));
  return v;
}

// llama.cpp's tensor names beside HF's: the model's own, and those of each block (blk.N. and
// model.layers.N.). Import and export both read them.
const std::vector<std::pair<std::string, std::string>>& global_names() {
  static const std::vector<std::pair<std::string, std::string>> names = {
      {"token_embd.weight", "model.embed_tokens.weight"},
      {"output_norm.weight", "model.norm.weight"},
      {"output.weight", "lm_head.weight"},
  };
  return names;
}
const std::vector<std::pair<std::string, std::string>>& block_names() {
  static const std::vector<std::pair<std::string, std::string>> names = {
      {"attn_norm.weight", "input_layernorm.weight"},
      {"ffn_norm.weight", "post_attention_layernorm.weight"},
      {"attn_q.weight", "self_attn.q_proj.weight"},
      {"attn_k.weight", "self_attn.k_proj.weight"},
      {"attn_v.weight", "self_attn.v_proj.weight"},
      {"attn_output.weight", "self_attn.o_proj.weight"},
      {"ffn_gate.weight", "mlp.gate_proj.weight"},
      {"ffn_up.weight", "mlp.up_proj.weight"},
      {"ffn_down.weight", "mlp.down_proj.weight"},
      {"attn_q.bias", "self_attn.q_proj.bias"},
      {"attn_k.bias", "self_attn.k_proj.bias"},
      {"attn_v.bias", "self_attn.v_proj.bias"},
      {"attn_output.bias", "self_attn.o_proj.bias"},
      {"attn_q_norm.weight", "self_attn.q_norm.weight"},
      {"attn_k_norm.weight", "self_attn.k_norm.weight"},
  };
  return names;
}

// The block number and the rest of `name` after `prefix` + "N.", or nullopt.
std::optional<std::pair<std::string, std::string>> block_part(const std::string& name,
                                                              const std::string& prefix) {
  if (name.rfind(prefix, 0) != 0) return std::nullopt;
  const size_t dot = name.find('.', prefix.size());
  if (dot == std::string::npos) return std::nullopt;
  std::string layer = name.substr(prefix.size(), dot - prefix.size());
  if (layer.empty() || layer.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::make_pair(std::move(layer), name.substr(dot + 1));
}

}  // namespace

std::string gguf_hf_name(const std::string& name) {
  for (const auto& [g, h] : global_names())
    if (name == g) return h;
  if (const auto part = block_part(name, "blk."))
    for (const auto& [g, h] : block_names())
      if (part->second == g) return "model.layers." + part->first + "." + h;
  return "";
}

namespace {

// llama.cpp's converter reorders each head's rows from [first half; second half] to interleaved
// pairs; viewing the rows as [heads, half, 2] and swapping the last two axes restores HF's order.
torch::Tensor unpermute_rows(const torch::Tensor& w, int64_t heads) {
  const int64_t rows = w.size(0), cols = w.size(1);
  return w.reshape({heads, rows / heads / 2, 2, cols})
      .transpose(1, 2)
      .reshape({rows, cols})
      .contiguous();
}

}  // namespace

std::string gguf_tensor_name(const std::string& hf) {
  for (const auto& [g, h] : global_names())
    if (hf == h) return g;
  if (const auto part = block_part(hf, "model.layers."))
    for (const auto& [g, h] : block_names())
      if (part->second == h) return "blk." + part->first + "." + g;
  return "";
}

// The inverse of unpermute_rows: [heads, 2, half] with the last two axes swapped.
torch::Tensor llama_cpp_rows(const torch::Tensor& w, int64_t heads) {
  const int64_t rows = w.size(0), cols = w.size(1);
  return w.reshape({heads, 2, rows / heads / 2, cols}).transpose(1, 2).reshape({rows, cols});
}

ModelConfig gguf_model_config(const GgufFile& file) {
  const std::string arch = file.at("general.architecture").string("general.architecture");
  // llama.cpp's architecture names beside HF's; qwen2 and qwen3 differ from llama by q/k/v
  // biases and per-head q/k norms, read from the tensors below as HF reads them from config.json.
  static const std::map<std::string, std::string> kArchitectures = {
      {"llama", "LlamaForCausalLM"}, {"qwen2", "Qwen2ForCausalLM"}, {"qwen3", "Qwen3ForCausalLM"}};
  const auto known = kArchitectures.find(arch);
  if (known == kArchitectures.end())
    fail_at(file.path, "key 'general.architecture'",
            "unsupported architecture '" + arch +
                "' (supported: llama, which includes Mistral, qwen2 and qwen3)");
  ModelConfig c;
  c.architecture = known->second;
  if (arch == "qwen2") {
    c.qkv_bias = true;
  } else {
    c.qkv_bias = c.o_bias = file.find("blk.0.attn_q.bias") != nullptr;
  }
  c.qk_norm = arch == "qwen3";
  c.num_layers = positive_key(file, arch_key(file, "block_count"));
  c.hidden_size = positive_key(file, arch_key(file, "embedding_length"));
  c.intermediate_size = positive_key(file, arch_key(file, "feed_forward_length"));
  c.num_heads = positive_key(file, arch_key(file, "attention.head_count"));
  c.num_kv_heads = file.has(arch_key(file, "attention.head_count_kv"))
                       ? positive_key(file, arch_key(file, "attention.head_count_kv"))
                       : c.num_heads;
  if (c.num_heads % c.num_kv_heads != 0)
    fail_at(file.path, "key '" + arch_key(file, "attention.head_count_kv") + "'",
            "does not divide the head count");
  if (!file.has(arch_key(file, "attention.key_length")) && c.hidden_size % c.num_heads != 0)
    fail_at(file.path, "key '" + arch_key(file, "attention.head_count") + "'",
            "does not divide the embedding length " + std::to_string(c.hidden_size));
  c.head_dim = file.has(arch_key(file, "attention.key_length"))
                   ? positive_key(file, arch_key(file, "attention.key_length"))
                   : c.hidden_size / c.num_heads;
  c.rms_norm_eps = file.at(arch_key(file, "attention.layer_norm_rms_epsilon"))
                       .number(arch_key(file, "attention.layer_norm_rms_epsilon"));
  if (c.rms_norm_eps <= 0) fail_at(file.path, "", "RMSNorm epsilon must be positive");
  c.rope_theta =
      file.has(arch_key(file, "rope.freq_base"))
          ? file.at(arch_key(file, "rope.freq_base")).number(arch_key(file, "rope.freq_base"))
          : 10000.0;
  if (file.has(arch_key(file, "rope.scaling.type"))) {
    auto type =
        file.at(arch_key(file, "rope.scaling.type")).string(arch_key(file, "rope.scaling.type"));
    if (type != "none")
      fail_at(file.path, "key '" + arch_key(file, "rope.scaling.type") + "'",
              "unsupported RoPE scaling '" + type + "'");
  }
  c.max_positions = positive_key(file, arch_key(file, "context_length"));
  // Llama 3.1 and later: the scaling's per-frequency factors, stored as a tensor.
  if (const GgufTensor* freqs = file.find("rope_freqs.weight")) {
    require_supported_type(file, *freqs);
    c.rope_scaling = llama3_scaling_from_factors(c, dequantize(file, *freqs),
                                                 file.path + ": tensor 'rope_freqs.weight'");
  }
  const std::string vocab_key = arch_key(file, "vocab_size");
  c.vocab_size = file.has(vocab_key)
                     ? positive_key(file, vocab_key)
                     : static_cast<int64_t>(
                           file.at("tokenizer.ggml.tokens").array("tokenizer.ggml.tokens").size());
  c.tie_word_embeddings = file.find("output.weight") == nullptr;
  if (file.has("tokenizer.ggml.bos_token_id"))
    c.bos_token_id = file.at("tokenizer.ggml.bos_token_id").integer("tokenizer.ggml.bos_token_id");
  if (file.has("tokenizer.ggml.eos_token_id"))
    c.eos_token_ids = {
        file.at("tokenizer.ggml.eos_token_id").integer("tokenizer.ggml.eos_token_id")};
  c.dtype = "float32";
  return c;
}

torch::Tensor gguf_hf_weight(const GgufFile& file, const ModelConfig& config,
                             const GgufTensor& tensor, NonFiniteWeights non_finite,
                             torch::ScalarType dtype) {
  const std::string name = gguf_hf_name(tensor.name);
  if (name.empty())
    fail_at(file.path, "tensor '" + tensor.name + "'", "not part of a Llama-family checkpoint");
  require_supported_type(file, tensor);
  // Converted 4M values at a time into the written type, so that a 7B model's embedding never
  // exists in fp32 beside its copy.
  const int64_t row = tensor.dims[0], rows = tensor_rows(tensor);
  const int64_t step = std::max<int64_t>(1, (int64_t{1} << 22) / row);
  std::vector<int64_t> shape(tensor.dims.rbegin(), tensor.dims.rend());
  torch::Tensor w = torch::empty(shape, dtype);
  torch::Tensor w_rows = w.view({rows, row});
  int64_t bad = 0;
  for (int64_t begin = 0; begin < rows; begin += step) {
    const int64_t end = std::min(begin + step, rows);
    const torch::Tensor piece = dequantize_rows(file, tensor, begin, end);
    bad += count_non_finite(piece);
    w_rows.slice(0, begin, end).copy_(piece);
  }
  report_non_finite(file.path, tensor.name, bad, w.numel(), non_finite);
  // Only llama.cpp's llama converter interleaves q/k rows (its RoPE rotates adjacent pairs);
  // qwen2 and qwen3 keep HF's order (llama.cpp runs them with the NEOX RoPE, HF's halves).
  if (config.architecture == "LlamaForCausalLM") {
    if (name.ends_with("q_proj.weight")) w = unpermute_rows(w, config.num_heads);
    if (name.ends_with("k_proj.weight")) w = unpermute_rows(w, config.num_kv_heads);
    if (name.ends_with("q_proj.bias") || name.ends_with("k_proj.bias"))
      fail_at(file.path, "tensor '" + tensor.name + "'",
              "q/k biases in a llama GGUF are not supported (their row order is not defined)");
  }
  return w;
}

ImportDtype import_dtype_by_name(const std::string& name, const std::string& where) {
  for (auto dtype : {ImportDtype::source, ImportDtype::float32, ImportDtype::bfloat16})
    if (name == import_dtype_name(dtype)) return dtype;
  throw Error(where + ": unknown dtype '" + name + "' (source, float32 or bfloat16)");
}

const char* import_dtype_name(ImportDtype dtype) {
  switch (dtype) {
    case ImportDtype::source:
      return "source";
    case ImportDtype::float32:
      return "float32";
    case ImportDtype::bfloat16:
      return "bfloat16";
  }
  return "?";
}

BpeVocabulary gguf_vocabulary(const GgufFile& file) {
  const std::string model = file.at("tokenizer.ggml.model").string("tokenizer.ggml.model");
  if (model != "gpt2")
    fail_at(file.path, "key 'tokenizer.ggml.model'",
            "unsupported tokenizer '" + model +
                "' (supported: gpt2, byte-level BPE; for SentencePiece models use the HF "
                "checkpoint with its tokenizer.model)");
  BpeVocabulary v;
  for (const auto& t : file.at("tokenizer.ggml.tokens").array("tokenizer.ggml.tokens"))
    v.tokens.push_back(t.string("tokenizer.ggml.tokens"));
  for (const auto& m : file.at("tokenizer.ggml.merges").array("tokenizer.ggml.merges")) {
    const std::string& s = m.string("tokenizer.ggml.merges");
    size_t space = s.find(' ', 1);
    if (space == std::string::npos)
      fail_at(file.path, "key 'tokenizer.ggml.merges'", "bad merge '" + s + "'");
    v.merges.emplace_back(s.substr(0, space), s.substr(space + 1));
  }
  // Token types: 3 = control, 4 = user-defined; both are matched whole, like HF added tokens.
  if (file.has("tokenizer.ggml.token_type")) {
    const auto& types = file.at("tokenizer.ggml.token_type").array("tokenizer.ggml.token_type");
    if (types.size() != v.tokens.size())
      fail_at(file.path, "key 'tokenizer.ggml.token_type'", "length differs from the token list");
    for (size_t id = 0; id < types.size(); ++id) {
      int64_t type = types[id].integer("tokenizer.ggml.token_type");
      if (type == 3 || type == 4)
        v.added.push_back({static_cast<int64_t>(id), v.tokens[id], type == 3});
    }
  }
  const std::string pre = file.has("tokenizer.ggml.pre")
                              ? file.at("tokenizer.ggml.pre").string("tokenizer.ggml.pre")
                              : "gpt-2";
  v.pre_tokenizer = pre_tokenizer_by_name(pre, file.path);
  // GGUF has no key for a normaliser or for HF's ignore_merges: llama.cpp's converter drops the
  // NFC step of Qwen's tokenizer.json and Llama 3's ignore_merges, and its runtime puts them back
  // by pre-tokeniser name. So does this: the name stands for the HF tokenizer it came from.
  v.normalize_nfc = pre == "qwen2";
  v.ignore_merges = pre == "llama-bpe" || pre == "llama3";
  auto id = [&](const char* key) -> int64_t {
    if (!file.has(key)) return -1;
    int64_t value = file.at(key).integer(key);
    if (value < 0 || value >= static_cast<int64_t>(v.tokens.size()))
      fail_at(file.path, std::string("key '") + key + "'", "id outside the vocabulary");
    return value;
  };
  v.bos_id = id("tokenizer.ggml.bos_token_id");
  if (file.has("tokenizer.ggml.add_bos_token"))
    v.add_bos = file.at("tokenizer.ggml.add_bos_token").boolean("tokenizer.ggml.add_bos_token");
  v.eos_id = id("tokenizer.ggml.eos_token_id");
  v.pad_id = id("tokenizer.ggml.padding_token_id");
  v.unk_id = id("tokenizer.ggml.unknown_token_id");
  return v;
}

namespace {

// The type a tensor of ggml type `type` is written in.
torch::ScalarType written_type(uint32_t type, ImportDtype dtype) {
  if (dtype == ImportDtype::float32) return torch::kFloat32;
  if (dtype == ImportDtype::bfloat16) return torch::kBFloat16;
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::kF32:
      return torch::kFloat32;
    case GgmlType::kF16:
      return torch::kFloat16;
    default:
      return torch::kBFloat16;  // BF16, and the quantised types: bf16 holds their 4-8 bits
  }
}

// config.json's torch_dtype: the type most of the written weights are in, as HF writes it.
std::string bulk_dtype(const std::vector<SafetensorsSpec>& specs) {
  std::map<torch::ScalarType, int64_t> weights;
  for (const auto& spec : specs) {
    int64_t count = 1;
    for (int64_t d : spec.shape) count *= d;
    weights[spec.dtype] += count;
  }
  torch::ScalarType bulk = torch::kFloat32;
  for (const auto& [type, count] : weights)
    if (count > weights[bulk]) bulk = type;
  return bulk == torch::kBFloat16 ? "bfloat16" : bulk == torch::kFloat16 ? "float16" : "float32";
}

}  // namespace

void import_gguf(const std::string& gguf_path, const std::string& out_dir,
                 void (*log)(const std::string&), NonFiniteWeights non_finite, ImportDtype dtype) {
  auto say = [&](const std::string& line) {
    if (log) log(line);
  };
  // make_directory_atomically checks this too; here it fails before a large file is read.
  if (fs::exists(out_dir) && !(fs::is_directory(out_dir) && fs::is_empty(out_dir)))
    fail_at(out_dir, "", "output directory exists and is not empty");
  GgufFile file = read_gguf(gguf_path);
  ModelConfig config = gguf_model_config(file);
  // Every tensor the metadata implies, with its shape, before anything is dequantised or written.
  std::map<std::string, std::vector<int64_t>> present;
  std::vector<SafetensorsSpec> specs;
  std::vector<const GgufTensor*> sources;  // the GGUF tensor of each spec
  for (const auto& t : file.tensors) {
    if (t.name == "rope_freqs.weight") continue;  // read into the config's RoPE scaling
    const std::string name = gguf_hf_name(t.name);
    if (name.empty())
      fail_at(file.path, "tensor '" + t.name + "'", "not part of a Llama-family checkpoint");
    require_supported_type(file, t);
    present[name] = std::vector<int64_t>(t.dims.rbegin(), t.dims.rend());
    specs.push_back({name, written_type(t.type, dtype), present[name]});
    sources.push_back(&t);
  }
  check_model_tensors(config, present, gguf_path, nullptr,
                      "key '" + arch_key(file, "block_count") + "'");
  BpeVocabulary vocab = gguf_vocabulary(file);
  if (static_cast<int64_t>(vocab.tokens.size()) > config.vocab_size)
    fail_at(gguf_path, "key 'tokenizer.ggml.tokens'", "more tokens than the model's vocab size");
  // Builds the tokenizer once so a defect in the vocabulary fails before anything is written.
  BpeTokenizer check(vocab, gguf_path);
  say("read " + gguf_path + ": " + std::to_string(file.tensors.size()) + " tensors, " +
      std::to_string(config.num_layers) + " layers, vocab " + std::to_string(config.vocab_size));
  const fs::path target = fs::absolute(out_dir);
  make_directory_atomically(
      out_dir, "importing",
      [&](const std::string& work) {
        const fs::path temp = work;
        write_safetensors_streamed(
            (temp / "model.safetensors").string(), specs,
            [&](size_t i) {
              const GgufTensor& t = *sources[i];
              torch::Tensor w = gguf_hf_weight(file, config, t, non_finite, specs[i].dtype);
              release_tensor_pages(file, t);
              // A 7B import takes a minute: a line every tenth of it.
              const size_t n = specs.size(), step = std::max<size_t>(1, n / 10);
              if ((i + 1) % step == 0 || i + 1 == n)
                say("converted " + std::to_string(i + 1) + " of " + std::to_string(n) + " tensors");
              return w;
            },
            {{"format", "pt"}});
        config.dtype = bulk_dtype(specs);
        write_file_atomically((temp / "config.json").string(),
                              model_config_to_json(config).dump(2) + "\n");
        json generation = {{"bos_token_id", config.bos_token_id},
                           {"eos_token_id", config.eos_token_ids.front()}};
        if (vocab.pad_id >= 0) generation["pad_token_id"] = vocab.pad_id;
        write_file_atomically((temp / "generation_config.json").string(),
                              generation.dump(2) + "\n");
        write_file_atomically((temp / "tokenizer.json").string(),
                              tokenizer_json(vocab).dump(2) + "\n");
        write_file_atomically(
            (temp / "tokenizer_config.json").string(),
            tokenizer_config_json(vocab, gguf_chat_template(file), config.max_positions).dump(2) +
                "\n");
        write_file_atomically((temp / "README.md").string(),
                              imported_base_card(gguf_base_facts(file), gguf_path));
      },
      log);
  say("wrote " + target.string());
}

std::string gguf_model_dir(const std::string& gguf_path, void (*log)(const std::string&),
                           NonFiniteWeights non_finite, torch::ScalarType compute) {
  const ImportDtype dtype = compute == torch::kFloat32 ? ImportDtype::float32 : ImportDtype::source;
  if (!fs::is_regular_file(gguf_path)) fail_at(gguf_path, "", "GGUF file not found");
  const char* cache = std::getenv("CITEFORGE_CACHE");
  const char* home = std::getenv("HOME");
  fs::path root = cache ? fs::path(cache) : fs::path(home ? home : "/tmp") / ".cache" / "citeforge";
  struct stat info {};
  if (::stat(gguf_path.c_str(), &info) != 0) fail_at(gguf_path, "", "cannot stat");
  const auto stamp = static_cast<long long>(info.st_mtime);
  // fp32 imports keep the name they had before imports came in other types.
  const std::string suffix =
      dtype == ImportDtype::float32 ? "" : std::string("-") + import_dtype_name(dtype);
  const fs::path dir =
      root / "imported" /
      (fs::path(gguf_path).stem().string() + "-" + std::to_string(fs::file_size(gguf_path)) + "-" +
       std::to_string(stamp) + suffix);
  if (fs::exists(dir / "model.safetensors")) return dir.string();
  if (log) log("importing " + gguf_path + " once into " + dir.string());
  fs::create_directories(dir.parent_path());
  // Several processes may import the same file at once (ranks, parallel tests): each writes its
  // own directory and the first rename wins; the others find the directory in place.
  const fs::path mine = dir.string() + ".by-" + std::to_string(::getpid());
  remove_abandoned_work(dir.parent_path(), dir.filename().string() + ".by-", log);
  remove_abandoned_work(dir.parent_path(), "." + dir.filename().string() + ".by-", log);
  fs::remove_all(mine);
  import_gguf(gguf_path, mine.string(), log, non_finite, dtype);
  std::error_code error;
  fs::rename(mine, dir, error);
  if (error) {
    fs::remove_all(mine);
    if (!fs::exists(dir / "model.safetensors"))
      fail_at(dir.string(), "", "cannot move the imported model into place: " + error.message());
  }
  return dir.string();
}

}  // namespace citeforge::models
