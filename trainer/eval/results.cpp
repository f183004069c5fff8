#include "trainer/eval/results.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <set>

#include "common/error.h"
#include "common/file_io.h"
#include "trainer/eval/eval_archive.h"
#include "trainer/run/run_dir.h"

namespace citeforge::trainer {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

int stage_rank(const std::string& stage) {
  const auto& names = stage_names();
  return static_cast<int>(std::find(names.begin(), names.end(), stage) - names.begin());
}

// Strict field access for one record of results.json.
struct RecordReader {
  const std::string& file;
  std::string where;  // "record 3"

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    fail_at(file, where, "field '" + field + "': " + what);
  }
  void only_keys(const json& object, const std::set<std::string>& allowed,
                 const std::string& prefix) const {
    for (const auto& [key, value] : object.items())
      if (!allowed.count(key)) fail(prefix + key, "unknown field");
  }
  const json& field(const json& object, const std::string& key, const std::string& path) const {
    auto it = object.find(key);
    if (it == object.end()) fail(path, "missing");
    return *it;
  }
  std::string string(const json& object, const std::string& key) const {
    const json& value = field(object, key, key);
    if (!value.is_string()) fail(key, "expected a string");
    return value.get<std::string>();
  }
  double number(const json& object, const std::string& key, const std::string& path) const {
    const json& value = field(object, key, path);
    if (value.is_null()) return std::numeric_limits<double>::quiet_NaN();
    if (!value.is_number()) fail(path, "expected a number or null");
    return value.get<double>();
  }
  std::size_t count(const json& object, const std::string& path) const {
    const json& value = field(object, "count", path);
    if (!value.is_number_integer() || value.get<long long>() < 0)
      fail(path, "expected a non-negative integer");
    return value.get<std::size_t>();
  }
};

// {against: {metric: {difference, count, ci_low, ci_high, p}}} (paired_to_json's layout).
std::vector<PairedComparison> paired_from_json(const json& object, const RecordReader& in) {
  if (!object.is_object()) in.fail("paired", "expected an object");
  const auto& known = comparison_names();
  std::vector<PairedComparison> out;
  for (const auto& [against, metrics] : object.items()) {
    const std::string path = "paired." + against;
    if (std::find(known.begin(), known.end(), against) == known.end())
      in.fail(path, "unknown comparison (chance, base, uncorrected)");
    if (!metrics.is_object()) in.fail(path, "expected an object");
    for (const auto& [metric, value] : metrics.items()) {
      const std::string at = path + "." + metric;
      if (!value.is_object()) in.fail(at, "expected an object");
      in.only_keys(value, {"difference", "count", "ci_low", "ci_high", "p"}, at + ".");
      PairedComparison c{against, metric, {}};
      c.test.difference = in.number(value, "difference", at + ".difference");
      c.test.ci_low = in.number(value, "ci_low", at + ".ci_low");
      c.test.ci_high = in.number(value, "ci_high", at + ".ci_high");
      c.test.p_value = in.number(value, "p", at + ".p");
      c.test.count = in.count(value, at + ".count");
      out.push_back(std::move(c));
    }
  }
  return out;
}

ResultRecord parse_record(const json& item, const RecordReader& in) {
  if (!item.is_object()) in.fail("", "expected an object");
  in.only_keys(item, {"stage", "epoch", "test_set", "checkpoint", "metrics", "paired"}, "");
  ResultRecord record;
  record.stage = in.string(item, "stage");
  if (!is_stage(record.stage))
    in.fail("stage", "'" + record.stage + "' is not one of base, sft, ppo, sft+ppo");
  const json& epoch = in.field(item, "epoch", "epoch");
  if (!epoch.is_number_integer() || epoch.get<long long>() < 0 ||
      epoch.get<long long>() > std::numeric_limits<int>::max())
    in.fail("epoch", "expected a non-negative integer");
  record.epoch = epoch.get<int>();
  record.test_set = in.string(item, "test_set");
  if (!is_plain_name(record.test_set))
    in.fail("test_set", "'" + record.test_set + "' is not a plain name (letters, digits, _ . + -)");
  record.checkpoint = in.string(item, "checkpoint");
  record.metrics =
      aggregates_from_json(in.field(item, "metrics", "metrics"), in.file, in.where, "metrics");
  if (item.contains("paired")) record.paired = paired_from_json(item["paired"], in);
  return record;
}

}  // namespace

json aggregates_to_json(const NamedAggregates& aggregates) {
  json out = json::object();
  for (const auto& [name, a] : aggregates) out[name] = aggregate_json(a);
  return out;
}

NamedAggregates aggregates_from_json(const json& object, const std::string& file,
                                     const std::string& where, const std::string& field) {
  RecordReader in{file, where};
  if (!object.is_object()) in.fail(field, "expected an object");
  NamedAggregates out;
  for (const auto& [name, value] : object.items()) {
    std::string path = field + "." + name;
    if (!value.is_object()) in.fail(path, "expected an object");
    in.only_keys(value, {"mean", "count", "ci_low", "ci_high"}, path + ".");
    rewards::Aggregate a;
    a.mean = in.number(value, "mean", path + ".mean");
    a.ci_low = in.number(value, "ci_low", path + ".ci_low");
    a.ci_high = in.number(value, "ci_high", path + ".ci_high");
    a.count = in.count(value, path + ".count");
    out.push_back({name, a});
  }
  return out;
}

namespace {

bool same_key(const ResultRecord& a, const ResultRecord& b) {
  return a.stage == b.stage && a.epoch == b.epoch && a.test_set == b.test_set;
}

}  // namespace

ResultRecord result_of(const EvalRecord& record, std::vector<PairedComparison> paired) {
  return {record.stage,      record.epoch,      record.test_set,
          record.checkpoint, record.aggregates, std::move(paired)};
}

const ResultRecord* find_result(const std::vector<ResultRecord>& results, const std::string& stage,
                                int epoch, const std::string& test_set) {
  for (const auto& r : results)
    if (r.stage == stage && r.epoch == epoch && r.test_set == test_set) return &r;
  return nullptr;
}

const rewards::Aggregate* find_metric(const ResultRecord& record, const std::string& name) {
  return find_aggregate(record.metrics, name);
}

rewards::Aggregate metric_of(const ResultRecord* record, const std::string& name) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const rewards::Aggregate* a = record ? find_metric(*record, name) : nullptr;
  return a ? *a : rewards::Aggregate{nan, 0, nan, nan};
}

std::vector<ResultRecord> read_results(const std::string& path) {
  json root;
  try {
    root = json::parse(read_file(path));
  } catch (const json::exception& e) {
    fail_at(path, "", std::string("invalid JSON: ") + e.what());
  }
  if (!root.is_array()) fail_at(path, "", "expected a list of results");
  std::vector<ResultRecord> out;
  for (std::size_t i = 0; i < root.size(); ++i) {
    RecordReader in{path, "record " + std::to_string(i)};
    ResultRecord record = parse_record(root[i], in);
    for (const auto& earlier : out)
      if (same_key(earlier, record))
        fail_at(path, in.where,
                "duplicate of an earlier record for stage '" + record.stage + "', epoch " +
                    std::to_string(record.epoch) + ", test set '" + record.test_set + "'");
    out.push_back(std::move(record));
  }
  return out;
}

void write_results(const std::string& path, const std::vector<ResultRecord>& results) {
  json root = json::array();
  for (const auto& r : results) {
    json record = {{"stage", r.stage},
                   {"epoch", r.epoch},
                   {"test_set", r.test_set},
                   {"checkpoint", r.checkpoint},
                   {"metrics", aggregates_to_json(r.metrics)}};
    if (!r.paired.empty()) record["paired"] = paired_to_json(r.paired);
    root.push_back(std::move(record));
  }
  write_file_atomically(path, root.dump(2) + "\n");
}

void upsert_result(std::vector<ResultRecord>& results, ResultRecord record) {
  for (auto& existing : results)
    if (same_key(existing, record)) {
      existing = std::move(record);
      return;
    }
  results.push_back(std::move(record));
}

void record_result(const std::string& path, const ResultRecord& record) {
  std::vector<ResultRecord> results;
  if (fs::exists(path)) results = read_results(path);
  upsert_result(results, record);
  write_results(path, results);
}

void sort_results(std::vector<ResultRecord>& results) {
  std::stable_sort(results.begin(), results.end(),
                   [](const ResultRecord& a, const ResultRecord& b) {
                     int sa = stage_rank(a.stage), sb = stage_rank(b.stage);
                     if (sa != sb) return sa < sb;
                     if (a.epoch != b.epoch) return a.epoch < b.epoch;
                     return a.test_set < b.test_set;
                   });
}

std::vector<ResultRecord> results_from_archives(const std::string& run_dir, int resamples) {
  fs::path eval_dir = RunDir{run_dir}.eval();
  std::error_code ec;
  if (!fs::is_directory(eval_dir, ec))
    fail_at(run_dir, "", "no eval/ directory, so no evaluation archives to read");
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(eval_dir))
    if (entry.is_directory()) dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  std::vector<EvalRecord> records;
  for (const auto& dir : dirs) {
    // <stage>-<epoch>; the stage itself may contain '-' only through "sft+ppo"-style names, so
    // the epoch is what follows the last '-'.
    std::string name = dir.filename().string();
    auto dash = name.rfind('-');
    std::string stage = dash == std::string::npos ? name : name.substr(0, dash);
    std::string digits = dash == std::string::npos ? "" : name.substr(dash + 1);
    bool numeric =
        !digits.empty() && digits.size() < 10 &&
        std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!is_stage(stage) || !numeric)
      fail_at(dir.string(), "",
              "not an evaluation directory <stage>-<epoch> (stage one of base, sft, ppo, "
              "sft+ppo)");
    int epoch = std::stoi(digits);
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.is_regular_file() && entry.path().extension() == ".h5")
        files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      EvalRecord record = read_eval_archive(file.string());
      std::string test_set = file.stem().string();
      auto mismatch = [&](const std::string& attr, const std::string& stored,
                          const std::string& expected) {
        fail_at(file.string(), "attribute '" + attr + "'",
                "is '" + stored + "' but the archive's path says '" + expected + "'");
      };
      if (record.stage != stage) mismatch("stage", record.stage, stage);
      if (record.epoch != epoch)
        mismatch("epoch", std::to_string(record.epoch), std::to_string(epoch));
      if (record.test_set != test_set) mismatch("test_set", record.test_set, test_set);
      records.push_back(std::move(record));
    }
  }
  if (records.empty())
    fail_at(eval_dir.string(), "", "no evaluation archives (<stage>-<epoch>/<test set>.h5)");
  auto find = [&](const std::string& stage, int epoch,
                  const std::string& test_set) -> const EvalRecord* {
    for (const auto& r : records)
      if (r.stage == stage && r.epoch == epoch && r.test_set == test_set) return &r;
    return nullptr;
  };
  std::vector<ResultRecord> out;
  for (const auto& record : records) {
    const EvalRecord* base = record.stage == "base" ? nullptr : find("base", 0, record.test_set);
    const auto uncorrected = uncorrected_test_set(record.test_set);
    const EvalRecord* before =
        uncorrected ? find(record.stage, record.epoch, *uncorrected) : nullptr;
    out.push_back(result_of(record, paired_comparisons(record, base, before,
                                                       rewards::kDefaultBootstrapSeed, resamples)));
  }
  sort_results(out);
  return out;
}

}  // namespace citeforge::trainer
