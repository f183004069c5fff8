#include "models/gguf_export.h"

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/file_io.h"
#include "common/work_folder.h"
#include "models/base_card.h"
#include "models/bpe_tokenizer.h"
#include "models/checkpoint_io.h"
#include "models/gguf.h"
#include "models/gguf_import.h"
#include "models/tokenizer.h"

namespace citeforge::models {
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kAlignment = 32;  // general.alignment's default

// GGUF's metadata value types.
enum : uint32_t { kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8, kArray = 9 };

template <typename T>
void put(std::string& out, T value) {
  char raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));  // GGUF is little-endian, as x86-64 and aarch64 are
  out.append(raw, sizeof(T));
}

void put_string(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out += s;
}

struct Metadata {
  std::string bytes;
  uint64_t count = 0;

  void key(const std::string& name, uint32_t type) {
    put_string(bytes, name);
    put<uint32_t>(bytes, type);
    ++count;
  }
  void u32(const std::string& name, uint32_t v) { key(name, kU32), put(bytes, v); }
  void f32(const std::string& name, float v) { key(name, kF32), put(bytes, v); }
  void boolean(const std::string& name, bool v) { key(name, kBool), put<uint8_t>(bytes, v); }
  void str(const std::string& name, const std::string& v) {
    key(name, kString), put_string(bytes, v);
  }
  void strings(const std::string& name, const std::vector<std::string>& v) {
    key(name, kArray);
    put<uint32_t>(bytes, kString);
    put<uint64_t>(bytes, v.size());
    for (const auto& s : v) put_string(bytes, s);
  }
  void i32s(const std::string& name, const std::vector<int32_t>& v) {
    key(name, kArray);
    put<uint32_t>(bytes, kI32);
    put<uint64_t>(bytes, v.size());
    for (int32_t x : v) put(bytes, x);
  }
};

// ggml's Q8_0: blocks of 32 values, an f16 scale max|x| / 127 and 32 signed bytes.
std::string q8_0_bytes(const torch::Tensor& w) {
  const auto flat = w.to(torch::kFloat32).contiguous().view({-1, 32});
  const auto scale = flat.abs().amax(1) / 127.0f;
  const auto inverse = torch::where(scale > 0, 1.0f / scale, torch::zeros_like(scale));
  const auto q = (flat * inverse.unsqueeze(1)).round().clamp(-127, 127).to(torch::kInt8);
  const auto d = scale.to(torch::kHalf).contiguous();
  std::string out;
  out.reserve(size_t(flat.size(0)) * 34);
  const auto* dp = d.data_ptr<at::Half>();
  const auto* qp = q.contiguous().data_ptr<int8_t>();
  for (int64_t b = 0; b < flat.size(0); ++b) {
    uint16_t bits;
    std::memcpy(&bits, &dp[b], 2);
    put(out, bits);
    out.append(reinterpret_cast<const char*>(qp + b * 32), 32);
  }
  return out;
}

struct TensorOut {
  std::string name;
  std::vector<int64_t> shape;  // PyTorch order
  uint32_t type;
  std::string bytes;
};

TensorOut encode(const std::string& name, const torch::Tensor& t, GgufExportType type) {
  auto w = t.detach().to(torch::kCPU).contiguous();
  TensorOut out{name, w.sizes().vec(), 0, ""};
  auto raw = [](const torch::Tensor& x) {
    return std::string(static_cast<const char*>(x.data_ptr()), size_t(x.nbytes()));
  };
  if (w.dim() == 1) {  // norms stay F32, as llama.cpp's converter keeps them
    out.type = uint32_t(GgmlType::kF32);
    out.bytes = raw(w.to(torch::kFloat32).contiguous());
  } else if (type == GgufExportType::q8_0 && w.size(-1) % 32 == 0) {
    out.type = uint32_t(GgmlType::kQ8_0);
    out.bytes = q8_0_bytes(w);
  } else if (type == GgufExportType::bf16) {
    out.type = uint32_t(GgmlType::kBF16);
    out.bytes = raw(w.to(torch::kBFloat16).contiguous());
  } else {  // f16, and Q8_0's fallback for rows that are not whole blocks
    out.type = uint32_t(GgmlType::kF16);
    out.bytes = raw(w.to(torch::kHalf).contiguous());
  }
  return out;
}

void check_exportable(const ModelConfig& c, const std::string& out_file) {
  auto refuse = [&](const std::string& what) {
    fail_at(
        out_file, "",
        "cannot export as GGUF: " + what + " has no form in llama.cpp's llama architecture here");
  };
  if (c.architecture != "LlamaForCausalLM" && c.architecture != "MistralForCausalLM")
    refuse("architecture " + c.architecture);
  if (!c.rope_scaling.type.empty() && c.rope_scaling.type != "default")
    refuse("RoPE scaling '" + c.rope_scaling.type + "'");
  if (c.qkv_bias || c.o_bias) refuse("attention biases");
  if (c.qk_norm) refuse("q/k norms");
  if (c.sliding_window) refuse("a sliding window");
  if (c.head_dim * c.num_heads != c.hidden_size) refuse("a head width unlike hidden / heads");
}

// The llama.cpp pre-tokeniser name whose steps are `steps`.
std::string pre_tokenizer_name(const std::vector<PreTokenizerStep>& steps,
                               const std::string& file) {
  for (const auto& name : pre_tokenizer_names()) {
    const auto known = pre_tokenizer_by_name(name, file);
    bool same = known.size() == steps.size();
    for (size_t i = 0; same && i < steps.size(); ++i)
      same = known[i].pattern == steps[i].pattern && known[i].kind == steps[i].kind;
    if (same) return name;
  }
  fail_at(file, "pre_tokenizer", "no llama.cpp pre-tokeniser matches it");
}

void tokenizer_metadata(Metadata& m, const std::string& model_dir, int64_t vocab_size) {
  const std::string file = tokenizer_file_in(model_dir);
  if (file.empty() || fs::path(file).filename() != "tokenizer.json")
    fail_at(
        file.empty() ? model_dir : file, "",
        "GGUF export needs a byte-level BPE tokenizer.json (SentencePiece is not exported yet)");
  const BpeVocabulary v = read_tokenizer_json(file);
  if (static_cast<int64_t>(v.tokens.size()) > vocab_size)
    fail_at(file, "model.vocab", "more tokens than the model's embedding rows");
  std::vector<std::string> tokens = v.tokens;
  std::vector<int32_t> types(tokens.size(), 1);                           // normal
  for (const auto& a : v.added) types[size_t(a.id)] = a.special ? 3 : 4;  // control, user-defined
  // llama.cpp wants one entry per embedding row: rows past the vocabulary become unused tokens.
  for (int64_t id = int64_t(tokens.size()); id < vocab_size; ++id) {
    tokens.push_back("[PAD" + std::to_string(id) + "]");
    types.push_back(5);  // unused
  }
  std::vector<std::string> merges;
  for (const auto& [a, b] : v.merges) merges.push_back(a + " " + b);
  m.str("tokenizer.ggml.model", "gpt2");
  m.str("tokenizer.ggml.pre", pre_tokenizer_name(v.pre_tokenizer, file));
  m.strings("tokenizer.ggml.tokens", tokens);
  m.i32s("tokenizer.ggml.token_type", types);
  m.strings("tokenizer.ggml.merges", merges);
  if (v.bos_id >= 0) m.u32("tokenizer.ggml.bos_token_id", uint32_t(v.bos_id));
  if (v.eos_id >= 0) m.u32("tokenizer.ggml.eos_token_id", uint32_t(v.eos_id));
  if (v.pad_id >= 0) m.u32("tokenizer.ggml.padding_token_id", uint32_t(v.pad_id));
  if (v.unk_id >= 0) m.u32("tokenizer.ggml.unknown_token_id", uint32_t(v.unk_id));
  m.boolean("tokenizer.ggml.add_bos_token", v.add_bos);
  const fs::path config = fs::path(model_dir) / "tokenizer_config.json";
  if (fs::is_regular_file(config)) {
    const auto json = nlohmann::json::parse(read_file(config.string()), nullptr, false);
    if (json.is_object() && json.contains("chat_template") && json["chat_template"].is_string())
      m.str("tokenizer.chat_template", json["chat_template"].get<std::string>());
  }
}

}  // namespace

GgufExportType gguf_export_type(const std::string& name) {
  if (name == "f16") return GgufExportType::f16;
  if (name == "bf16") return GgufExportType::bf16;
  if (name == "q8_0") return GgufExportType::q8_0;
  throw Error("export: --gguf-type must be f16, bf16 or q8_0, got '" + name + "'");
}

void export_gguf(LlamaForCausalLM& model, const std::string& model_dir, const std::string& out_file,
                 GgufExportType type) {
  const ModelConfig& c = model->config;
  check_exportable(c, out_file);
  Metadata m;
  m.str("general.architecture", "llama");
  const BaseModelFacts base = read_base_facts(model_dir);
  m.str("general.name", base.name.empty() ? fs::path(out_file).stem().string() : base.name);
  if (!base.license.empty()) m.str("general.license", base.license);
  m.u32("general.file_type", type == GgufExportType::f16    ? 1
                             : type == GgufExportType::bf16 ? 32
                                                            : 7);
  m.u32("llama.context_length", uint32_t(c.max_positions));
  m.u32("llama.embedding_length", uint32_t(c.hidden_size));
  m.u32("llama.block_count", uint32_t(c.num_layers));
  m.u32("llama.feed_forward_length", uint32_t(c.intermediate_size));
  m.u32("llama.rope.dimension_count", uint32_t(c.head_dim));
  m.u32("llama.attention.head_count", uint32_t(c.num_heads));
  m.u32("llama.attention.head_count_kv", uint32_t(c.num_kv_heads));
  m.f32("llama.attention.layer_norm_rms_epsilon", float(c.rms_norm_eps));
  m.f32("llama.rope.freq_base", float(c.rope_theta));
  m.u32("llama.vocab_size", uint32_t(c.vocab_size));
  tokenizer_metadata(m, model_dir, c.vocab_size);

  std::vector<TensorOut> tensors;
  torch::NoGradGuard no_grad;
  for (const auto& [hf, t] : dense_weights(model, torch::kFloat32)) {
    const std::string name = gguf_tensor_name(hf);
    if (name.empty()) fail_at(out_file, "tensor '" + hf + "'", "has no llama.cpp name");
    if (name == "output.weight" && c.tie_word_embeddings) continue;
    auto w = t.to(torch::kFloat32);
    if (hf.ends_with("q_proj.weight")) w = llama_cpp_rows(w, c.num_heads);
    if (hf.ends_with("k_proj.weight")) w = llama_cpp_rows(w, c.num_kv_heads);
    tensors.push_back(encode(name, w, type));
  }

  std::string head = "GGUF";
  put<uint32_t>(head, 3);
  put<uint64_t>(head, tensors.size());
  put<uint64_t>(head, m.count);
  head += m.bytes;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    put_string(head, t.name);
    put<uint32_t>(head, uint32_t(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) put<uint64_t>(head, uint64_t(*it));
    put<uint32_t>(head, t.type);
    put<uint64_t>(head, offset);
    offset += (t.bytes.size() + kAlignment - 1) / kAlignment * kAlignment;
  }
  head.append((kAlignment - head.size() % kAlignment) % kAlignment, '\0');

  // Written through a temporary file renamed when complete; one left by a killed export goes.
  const fs::path target = fs::absolute(out_file);
  remove_abandoned_work(target.parent_path().string(), target.filename().string() + ".tmp.");
  AtomicFileWriter out(out_file);
  out.write(head.data(), head.size());
  for (const auto& t : tensors) {
    out.write(t.bytes.data(), t.bytes.size());
    const std::string pad((kAlignment - t.bytes.size() % kAlignment) % kAlignment, '\0');
    out.write(pad.data(), pad.size());
  }
  out.commit();
}

}  // namespace citeforge::models
