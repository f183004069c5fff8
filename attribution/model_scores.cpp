#include "attribution/model_scores.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "common/error.h"
#include "data/citations.h"

namespace citeforge::attribution {
namespace {

// Token ids with the text they decode to and where each token's text ends in it. The pieces'
// concatenation is the decoded text (models/tokenizer.h), so a character range of the text
// maps to the tokens that overlap it.
struct TokenText {
  std::vector<int64_t> ids;
  std::string text;
  std::vector<std::size_t> ends;
};

TokenText token_text(const models::Tokenizer& tokenizer, std::vector<int64_t> ids) {
  TokenText t;
  t.ids = std::move(ids);
  for (int64_t id : t.ids) {
    t.text += tokenizer.piece(id);
    t.ends.push_back(t.text.size());
  }
  return t;
}

// Tokens [first, last) of `t` whose text overlaps characters [begin, end).
std::pair<int64_t, int64_t> token_range(const TokenText& t, std::size_t begin, std::size_t end) {
  int64_t first = -1, last = -1;
  std::size_t start = 0;
  for (std::size_t i = 0; i < t.ends.size(); ++i) {
    if (t.ends[i] > begin && start < end) {
      if (first < 0) first = int64_t(i);
      last = int64_t(i) + 1;
    }
    start = t.ends[i];
  }
  return first < 0 ? std::pair<int64_t, int64_t>{0, 0} : std::pair<int64_t, int64_t>{first, last};
}

torch::Tensor ids_tensor(const std::vector<int64_t>& ids, const torch::Device& device) {
  return torch::tensor(ids, torch::kInt64).unsqueeze(0).to(device);
}

models::AttentionInputs positions_from(int64_t start, int64_t count, const torch::Device& device) {
  models::AttentionInputs inputs;
  inputs.positions = torch::arange(start, start + count, torch::kInt64).unsqueeze(0).to(device);
  return inputs;
}

torch::Device model_device(ModelReader& reader) {
  return reader.model->parameters().front().device();
}

// The point's text as a character range of the answer, without the spaces around it or the
// punctuation it starts with (the end of the sentence before, after that one's citation).
std::pair<std::size_t, std::size_t> trimmed(const std::string& answer, const FactualPoint& p) {
  std::size_t b = p.text_begin, e = p.text_end;
  while (b < e && (std::isspace(static_cast<unsigned char>(answer[b])) ||
                   std::ispunct(static_cast<unsigned char>(answer[b]))))
    ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(answer[e - 1]))) --e;
  return {b, e};
}

// attention and bertscore: one forward pass over the prompt followed by the answer.
std::optional<std::vector<std::vector<double>>> read_forward_pass(
    ModelReader& reader, FixMethod method, const data::Example& example, const std::string& answer,
    const std::vector<FactualPoint>& points, std::string* why) {
  const auto& tok = *reader.tokenizer;
  const TokenText prompt = token_text(
      tok,
      models::encode_chat_prompt(tok, reader.chat, data::render_prompt(reader.prompt, example)));
  const TokenText reply = token_text(tok, models::encode_chat_answer(tok, reader.chat, answer));
  const int64_t P = int64_t(prompt.ids.size()), A = int64_t(reply.ids.size());
  if (P + A > reader.model->config.context_length()) {
    *why = "prompt and answer take " + std::to_string(P + A) + " tokens, more than the model's " +
           std::to_string(reader.model->config.context_length()) + " positions";
    return std::nullopt;
  }
  // SentencePiece may put a space before the answer's first word.
  const std::size_t shift = reply.text.find(answer);
  if (answer.empty() || shift == std::string::npos) {
    *why = "the answer's tokens do not decode to the answer";
    return std::nullopt;
  }
  // Each source's span of the prompt, found in order (its text appears verbatim there).
  std::vector<std::pair<int64_t, int64_t>> spans;
  std::size_t from = 0;
  for (const auto& s : example.sources) {
    const std::size_t at = s.text.empty() ? std::string::npos : prompt.text.find(s.text, from);
    if (at == std::string::npos) {
      spans.push_back({0, 0});
      continue;
    }
    spans.push_back(token_range(prompt, at, at + s.text.size()));
    from = at + s.text.size();
  }

  std::vector<int64_t> ids = prompt.ids;
  ids.insert(ids.end(), reply.ids.begin(), reply.ids.end());
  const auto device = model_device(reader);
  const auto& config = reader.model->config;
  models::ForwardProbe probe;
  probe.attention = method == FixMethod::attention;
  if (method == FixMethod::bertscore)
    probe.keep_layer = reader.hidden_layer >= 0
                           ? std::min(reader.hidden_layer, config.num_layers - 1)
                           : config.num_layers / 2;
  probe.stop_at_kept_layer = !probe.attention;
  {
    torch::NoGradGuard no_grad;
    reader.model->hidden_states(ids_tensor(ids, device), positions_from(0, P + A, device), nullptr,
                                &probe);
  }
  torch::Tensor mass, states;
  if (probe.attention) {
    // Shares: each query's probabilities sum to 1 per head and layer.
    mass = probe.attention_mass[0].to(torch::kCPU, torch::kFloat64) /
           double(config.num_heads * config.num_layers);
  } else {
    states = probe.layer_output[0].to(torch::kCPU, torch::kFloat32);
    states = torch::nn::functional::normalize(states - states.mean(0, true),
                                              torch::nn::functional::NormalizeFuncOptions().dim(1));
  }
  std::vector<std::vector<double>> scores;
  for (const auto& p : points) {
    std::vector<double> row(example.sources.size(), 0.0);
    const auto [b, e] = trimmed(answer, p);
    const auto [first, last] = token_range(reply, shift + b, shift + e);
    if (p.citations > 0 && last > first) {
      for (std::size_t d = 0; d < spans.size(); ++d) {
        const auto [s0, s1] = spans[d];
        if (s1 <= s0) continue;
        if (probe.attention) {
          // The point's share on the source over the whole answer's: what every answer token
          // gives a source (its length, its distance, the sink of the prompt's end) is common
          // to all points and cancels, what this point looks at more than the rest does not.
          const double point =
              mass.slice(0, P + first, P + last).slice(1, s0, s1).sum().item<double>() /
              double(last - first);
          const double whole =
              mass.slice(0, P, P + A).slice(1, s0, s1).sum().item<double>() / double(A);
          row[d] = whole > 0 ? point / whole : 0.0;
        } else {
          auto point_states = states.slice(0, P + first, P + last);
          auto source_states = states.slice(0, s0, s1);
          auto cosines = torch::matmul(point_states, source_states.t());
          // Shifted to [0, 1] so that "no better than anything" stays above the no-evidence 0.
          row[d] = (1.0 + std::get<0>(cosines.max(1)).mean().item<double>()) / 2.0;
        }
      }
    }
    scores.push_back(std::move(row));
  }
  return scores;
}

// ask_model: for each point, the probabilities of the answers "[1]" ... "[N]" to the ask
// template's question, from one prompt pass and a few tokens per candidate. A small model
// prefers some numbers whatever the statement (often "[1]"), so each probability is divided by
// the one it gets for a statement that says nothing ("N/A"), as contextual calibration does,
// and the quotients are normalised again.
std::optional<std::vector<std::vector<double>>> ask_model(ModelReader& reader,
                                                          const data::Example& example,
                                                          const std::string& answer,
                                                          const std::vector<FactualPoint>& points,
                                                          std::string* why) {
  const auto& tok = *reader.tokenizer;
  const auto& config = reader.model->config;
  std::vector<std::vector<int64_t>> candidates;
  for (const auto& s : example.sources) {
    std::string label = "[";
    label += std::to_string(s.key);
    label += ']';
    candidates.push_back(models::encode_chat_answer(tok, reader.chat, label));
  }
  std::size_t longest = 0;
  for (const auto& c : candidates) longest = std::max(longest, c.size());
  // The candidates' probabilities for one statement, or nothing when the question is too long.
  auto answer_probabilities =
      [&](const std::string& statement) -> std::optional<std::vector<double>> {
    data::Example question = example;
    question.question = statement;
    const auto prompt =
        models::encode_chat_prompt(tok, reader.chat, data::render_prompt(reader.ask, question));
    const int64_t P = int64_t(prompt.size());
    if (P + int64_t(longest) > config.context_length()) {
      *why = "the question for a point takes " + std::to_string(P) +
             " tokens, more than the model's " + std::to_string(config.context_length()) +
             " positions allow";
      return std::nullopt;
    }
    const auto log_probs = continuation_log_probs(reader.model, prompt, candidates);
    const double top = *std::max_element(log_probs.begin(), log_probs.end());
    double sum = 0;
    for (double lp : log_probs) sum += std::exp(lp - top);
    std::vector<double> probs;
    for (double lp : log_probs) probs.push_back(std::exp(lp - top) / sum);
    return probs;
  };
  const auto prior = answer_probabilities("N/A");
  if (!prior) return std::nullopt;
  std::vector<std::vector<double>> scores;
  for (const auto& p : points) {
    std::vector<double> row(example.sources.size(), 0.0);
    const auto [b, e] = trimmed(answer, p);
    if (p.citations > 0 && e > b) {
      const auto probs = answer_probabilities(answer.substr(b, e - b));
      if (!probs) return std::nullopt;
      double sum = 0;
      for (std::size_t d = 0; d < row.size(); ++d) sum += row[d] = (*probs)[d] / (*prior)[d];
      for (auto& v : row) v /= sum;
    }
    scores.push_back(std::move(row));
  }
  return scores;
}

}  // namespace

std::vector<double> continuation_log_probs(models::LlamaForCausalLM& model,
                                           const std::vector<int64_t>& prompt,
                                           const std::vector<std::vector<int64_t>>& continuations) {
  torch::NoGradGuard no_grad;
  const auto device = model->parameters().front().device();
  const int64_t P = int64_t(prompt.size());
  std::size_t longest = 0;
  for (const auto& c : continuations) longest = std::max(longest, c.size());
  auto cache = models::make_kv_cache(model->config, 1, P + int64_t(longest),
                                     model->parameters().front().options());
  auto last =
      model->hidden_states(ids_tensor(prompt, device), positions_from(0, P, device), &cache);
  const auto first =
      torch::log_softmax(model->logits(last.select(1, P - 1).to(torch::kFloat32))[0], -1);
  std::vector<double> out;
  for (const auto& c : continuations) {
    if (c.empty()) throw Error("continuation_log_probs: an empty continuation");
    cache.length = P;  // every continuation follows the same prompt
    double total = first[c[0]].item<double>();
    if (c.size() > 1) {
      std::vector<int64_t> head(c.begin(), c.end() - 1);
      auto h = model->hidden_states(ids_tensor(head, device),
                                    positions_from(P, int64_t(head.size()), device), &cache);
      auto lp = torch::log_softmax(model->logits(h.to(torch::kFloat32))[0], -1);
      for (std::size_t i = 1; i < c.size(); ++i) total += lp[int64_t(i) - 1][c[i]].item<double>();
    }
    out.push_back(total);
  }
  return out;
}

std::optional<std::vector<std::vector<double>>> model_point_scores(
    ModelReader& reader, FixMethod method, const data::Example& example, const std::string& answer,
    const std::vector<FactualPoint>& points, std::string* why) {
  if (!needs_model(method))
    throw Error(std::string("model_point_scores: ") + to_string(method) + " is not a model method");
  if (method == FixMethod::ask_model) return ask_model(reader, example, answer, points, why);
  return read_forward_pass(reader, method, example, answer, points, why);
}

FixedAnswer fix_citations_with_model(ModelReader& reader, const data::Example& example,
                                     const std::string& answer, FixMethod method) {
  const auto parsed = data::parse_citations(answer, example.sources, example.citation_style);
  const auto points = factual_points(answer, parsed);
  FixedAnswer out;
  bool cites = false;
  for (const auto& p : points) cites = cites || p.citations > 0;
  if (!cites || example.sources.empty()) {  // nothing to re-assign: no forward pass either
    out.answer = answer;
    return out;
  }
  std::string why;
  const auto scores = model_point_scores(reader, method, example, answer, points, &why);
  if (!scores) {
    out.answer = answer;
    out.skipped = true;
    out.why = why;
    for (const auto& p : points) out.points += p.citations > 0 ? 1 : 0;
    return out;
  }
  std::vector<bool> candidates;
  for (const auto& s : example.sources) candidates.push_back(!s.text.empty());
  return reassign_citations(example, answer, points, *scores, candidates);
}

}  // namespace citeforge::attribution
