#include "trainer/eval/eval_archive.h"

#include <fcntl.h>
#include <hdf5.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <utility>

#include "common/error.h"
#include "common/isolated_call.h"

namespace citeforge::trainer {

namespace {

namespace fs = std::filesystem;

// Owns one HDF5 identifier and closes it with the matching H5?close.
class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Handle(Handle&& other) noexcept : id_(other.id_), close_(other.close_) { other.id_ = -1; }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle& operator=(Handle&&) = delete;
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// HDF5 prints its error stack to stderr by default; citeforge reports errors itself.
void silence_hdf5() {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

// The innermost message on HDF5's error stack, so an error can say why (e.g. "unable to open
// file"), or "" when the stack is empty.
std::string hdf5_reason() {
  std::string reason;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned, const H5E_error2_t* err, void* data) -> herr_t {
        auto* out = static_cast<std::string*>(data);
        if (out->empty() && err->desc) *out = err->desc;
        return 0;
      },
      &reason);
  H5Eclear2(H5E_DEFAULT);
  return reason;
}

[[noreturn]] void fail_hdf5(const std::string& file, const std::string& where,
                            const std::string& what) {
  std::string reason = hdf5_reason();
  fail_at(file, where, reason.empty() ? what : what + " (" + reason + ")");
}

Handle utf8_string_type() {
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  return type;
}

// ------------------------------------------------------------------ writing

void write_string_attribute(hid_t object, const std::string& name, const std::string& value,
                            const std::string& file) {
  Handle type = utf8_string_type();
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle attr(H5Acreate2(object, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
              H5Aclose);
  const char* text = value.c_str();
  if (!attr.ok() || H5Awrite(attr.get(), type.get(), &text) < 0)
    fail_hdf5(file, "attribute '" + name + "'", "cannot write");
}

template <typename T>
void write_number_attribute(hid_t object, const std::string& name, hid_t file_type,
                            hid_t memory_type, T value, const std::string& file) {
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle attr(H5Acreate2(object, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
              H5Aclose);
  if (!attr.ok() || H5Awrite(attr.get(), memory_type, &value) < 0)
    fail_hdf5(file, "attribute '" + name + "'", "cannot write");
}

void write_strings(hid_t parent, const std::string& name, const std::vector<std::string>& values,
                   const std::string& file) {
  Handle type = utf8_string_type();
  hsize_t dims[1] = {values.size()};
  Handle space(H5Screate_simple(1, dims, nullptr), H5Sclose);
  Handle dataset(H5Dcreate2(parent, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT,
                            H5P_DEFAULT),
                 H5Dclose);
  if (!dataset.ok()) fail_hdf5(file, "dataset '" + name + "'", "cannot create");
  if (values.empty()) return;
  std::vector<const char*> pointers;
  for (const auto& v : values) pointers.push_back(v.c_str());
  if (H5Dwrite(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, pointers.data()) < 0)
    fail_hdf5(file, "dataset '" + name + "'", "cannot write");
}

void write_metric(hid_t group, const std::string& name, const std::vector<double>& values,
                  const rewards::Aggregate& aggregate, const std::string& file) {
  std::string where = "dataset 'metrics/" + name + "'";
  hsize_t dims[1] = {values.size()};
  Handle space(H5Screate_simple(1, dims, nullptr), H5Sclose);
  Handle dataset(H5Dcreate2(group, name.c_str(), H5T_IEEE_F64LE, space.get(), H5P_DEFAULT,
                            H5P_DEFAULT, H5P_DEFAULT),
                 H5Dclose);
  if (!dataset.ok()) fail_hdf5(file, where, "cannot create");
  if (!values.empty() &&
      H5Dwrite(dataset.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0)
    fail_hdf5(file, where, "cannot write");
  write_number_attribute(dataset.get(), "mean", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, aggregate.mean,
                         file);
  write_number_attribute(dataset.get(), "ci_low", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                         aggregate.ci_low, file);
  write_number_attribute(dataset.get(), "ci_high", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                         aggregate.ci_high, file);
  write_number_attribute(dataset.get(), "count", H5T_STD_U64LE, H5T_NATIVE_ULLONG,
                         static_cast<unsigned long long>(aggregate.count), file);
}

void write_hdf5(const std::string& path, const std::string& file, const EvalRecord& record) {
  Handle h5(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  if (!h5.ok()) fail_hdf5(file, "", "cannot create HDF5 file");
  write_number_attribute(h5.get(), "format_version", H5T_STD_I64LE, H5T_NATIVE_LLONG,
                         static_cast<long long>(kEvalArchiveFormatVersion), file);
  write_string_attribute(h5.get(), "stage", record.stage, file);
  write_number_attribute(h5.get(), "epoch", H5T_STD_I64LE, H5T_NATIVE_LLONG,
                         static_cast<long long>(record.epoch), file);
  write_string_attribute(h5.get(), "test_set", record.test_set, file);
  write_string_attribute(h5.get(), "checkpoint", record.checkpoint, file);
  write_strings(h5.get(), "ids", record.ids, file);
  write_strings(h5.get(), "prompts", record.prompts, file);
  write_strings(h5.get(), "generations", record.generations, file);

  Handle gcpl(H5Pcreate(H5P_GROUP_CREATE), H5Pclose);
  H5Pset_link_creation_order(gcpl.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  Handle group(H5Gcreate2(h5.get(), "metrics", H5P_DEFAULT, gcpl.get(), H5P_DEFAULT), H5Gclose);
  if (!group.ok()) fail_hdf5(file, "group 'metrics'", "cannot create");
  for (std::size_t m = 0; m < record.metrics.size(); ++m)
    write_metric(group.get(), record.metrics[m].first, record.metrics[m].second,
                 record.aggregates[m].second, file);
  if (H5Fflush(h5.get(), H5F_SCOPE_GLOBAL) < 0) fail_hdf5(file, "", "cannot flush");
}

// ------------------------------------------------------------------ reading

std::string read_string_attribute(hid_t object, const std::string& name, const std::string& file,
                                  const std::string& where) {
  if (H5Aexists(object, name.c_str()) <= 0) fail_at(file, where, "missing");
  Handle attr(H5Aopen(object, name.c_str(), H5P_DEFAULT), H5Aclose);
  Handle stored(H5Aget_type(attr.get()), H5Tclose);
  if (H5Tget_class(stored.get()) != H5T_STRING || H5Tis_variable_str(stored.get()) <= 0)
    fail_at(file, where, "expected a variable-length string");
  Handle type = utf8_string_type();
  char* text = nullptr;
  if (H5Aread(attr.get(), type.get(), &text) < 0) fail_hdf5(file, where, "cannot read");
  std::string out = text ? text : "";
  H5free_memory(text);
  return out;
}

template <typename T>
T read_number_attribute(hid_t object, const std::string& name, H5T_class_t expected,
                        hid_t memory_type, const std::string& file, const std::string& where) {
  if (H5Aexists(object, name.c_str()) <= 0) fail_at(file, where, "missing");
  Handle attr(H5Aopen(object, name.c_str(), H5P_DEFAULT), H5Aclose);
  Handle stored(H5Aget_type(attr.get()), H5Tclose);
  Handle space(H5Aget_space(attr.get()), H5Sclose);
  if (H5Tget_class(stored.get()) != expected || H5Sget_simple_extent_npoints(space.get()) != 1)
    fail_at(file, where,
            expected == H5T_FLOAT ? "expected one floating-point number" : "expected one integer");
  T value{};
  if (H5Aread(attr.get(), memory_type, &value) < 0) fail_hdf5(file, where, "cannot read");
  return value;
}

// Opens a one-dimensional dataset of class `expected` and sets `length` to its length.
Handle open_column(hid_t parent, const std::string& name, const std::string& path_name,
                   H5T_class_t expected, const std::string& file, hsize_t& length) {
  std::string where = "dataset '" + path_name + "'";
  if (H5Lexists(parent, name.c_str(), H5P_DEFAULT) <= 0) fail_at(file, where, "missing");
  Handle dataset(H5Dopen2(parent, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!dataset.ok()) fail_hdf5(file, where, "cannot open as a dataset");
  Handle type(H5Dget_type(dataset.get()), H5Tclose);
  Handle space(H5Dget_space(dataset.get()), H5Sclose);
  if (H5Tget_class(type.get()) != expected ||
      (expected == H5T_STRING && H5Tis_variable_str(type.get()) <= 0))
    fail_at(file, where,
            expected == H5T_STRING ? "expected variable-length strings" : "expected float64");
  if (H5Sget_simple_extent_ndims(space.get()) != 1) fail_at(file, where, "expected one dimension");
  hsize_t dims[1] = {0};
  H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  length = dims[0];
  return dataset;
}

void check_length(hsize_t length, std::size_t expected, const std::string& file,
                  const std::string& where) {
  if (length != expected)
    fail_at(
        file, where,
        "has " + std::to_string(length) + " entries, but 'ids' has " + std::to_string(expected));
}

std::vector<std::string> read_strings(hid_t parent, const std::string& name,
                                      const std::string& file) {
  hsize_t length = 0;
  Handle dataset = open_column(parent, name, name, H5T_STRING, file, length);
  std::vector<char*> pointers(length, nullptr);
  std::vector<std::string> out;
  if (length == 0) return out;
  Handle type = utf8_string_type();
  if (H5Dread(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, pointers.data()) < 0)
    fail_hdf5(file, "dataset '" + name + "'", "cannot read");
  for (char* p : pointers) {
    out.emplace_back(p ? p : "");
    H5free_memory(p);
  }
  return out;
}

std::pair<std::vector<double>, rewards::Aggregate> read_metric(hid_t group, const std::string& name,
                                                               std::size_t expected,
                                                               const std::string& file) {
  std::string path_name = "metrics/" + name;
  std::string where = "dataset '" + path_name + "'";
  hsize_t length = 0;
  Handle dataset = open_column(group, name, path_name, H5T_FLOAT, file, length);
  check_length(length, expected, file, where);
  std::vector<double> values(length);
  if (length > 0 &&
      H5Dread(dataset.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0)
    fail_hdf5(file, where, "cannot read");
  auto attr_where = [&](const char* attr) { return where + ": attribute '" + attr + "'"; };
  rewards::Aggregate aggregate;
  aggregate.mean = read_number_attribute<double>(dataset.get(), "mean", H5T_FLOAT,
                                                 H5T_NATIVE_DOUBLE, file, attr_where("mean"));
  aggregate.ci_low = read_number_attribute<double>(dataset.get(), "ci_low", H5T_FLOAT,
                                                   H5T_NATIVE_DOUBLE, file, attr_where("ci_low"));
  aggregate.ci_high = read_number_attribute<double>(dataset.get(), "ci_high", H5T_FLOAT,
                                                    H5T_NATIVE_DOUBLE, file, attr_where("ci_high"));
  aggregate.count = static_cast<std::size_t>(read_number_attribute<unsigned long long>(
      dataset.get(), "count", H5T_INTEGER, H5T_NATIVE_ULLONG, file, attr_where("count")));
  return {std::move(values), aggregate};
}

bool has_nul(const std::string& text) {
  return text.find('\0') != std::string::npos;
}

}  // namespace

void validate_eval_record(const EvalRecord& record, const std::string& file) {
  if (!is_stage(record.stage))
    fail_at(file, "stage", "'" + record.stage + "' is not one of base, sft, ppo, sft+ppo");
  if (record.epoch < 0) fail_at(file, "epoch", "must not be negative");
  if (record.stage == "base" && record.epoch != 0)
    fail_at(file, "epoch", "the base model is epoch 0, got " + std::to_string(record.epoch));
  if (!is_plain_name(record.test_set))
    fail_at(file, "test_set",
            "'" + record.test_set + "' is not a plain name (letters, digits, _ . + -)");
  std::size_t n = record.ids.size();
  auto check_column = [&](const std::vector<std::string>& column, const char* name) {
    if (column.size() != n)
      fail_at(
          file, name,
          "has " + std::to_string(column.size()) + " entries, but 'ids' has " + std::to_string(n));
    for (std::size_t i = 0; i < column.size(); ++i)
      if (has_nul(column[i]))
        fail_at(file, std::string(name) + "[" + std::to_string(i) + "]", "contains a NUL byte");
  };
  check_column(record.ids, "ids");
  check_column(record.prompts, "prompts");
  check_column(record.generations, "generations");
  if (has_nul(record.stage) || has_nul(record.checkpoint))
    fail_at(file, "checkpoint", "contains a NUL byte");
  if (record.aggregates.size() != record.metrics.size())
    fail_at(file, "aggregates",
            std::to_string(record.aggregates.size()) + " aggregates for " +
                std::to_string(record.metrics.size()) + " metrics");
  for (std::size_t m = 0; m < record.metrics.size(); ++m) {
    const auto& [name, column] = record.metrics[m];
    if (!is_plain_name(name)) fail_at(file, "metric '" + name + "'", "is not a plain name");
    for (std::size_t k = 0; k < m; ++k)
      if (record.metrics[k].first == name) fail_at(file, "metric '" + name + "'", "appears twice");
    if (column.size() != n)
      fail_at(
          file, "metric '" + name + "'",
          "has " + std::to_string(column.size()) + " entries, but 'ids' has " + std::to_string(n));
    if (record.aggregates[m].first != name)
      fail_at(file, "aggregates",
              "entry " + std::to_string(m) + " is '" + record.aggregates[m].first +
                  "', expected '" + name + "'");
  }
}

void write_eval_archive(const std::string& path, const EvalRecord& record) {
  silence_hdf5();
  validate_eval_record(record, path);
  fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  try {
    write_hdf5(tmp, path, record);  // closes the file before returning
    int fd = ::open(tmp.c_str(), O_RDONLY);
    if (fd < 0 || ::fsync(fd) != 0) {
      if (fd >= 0) ::close(fd);
      fail_at(path, "", "cannot fsync the temporary file " + tmp);
    }
    ::close(fd);
    fs::rename(tmp, target);
  } catch (...) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw;
  }
}

namespace {

// The record as plain bytes, to cross from the process that read the archive to its parent.
void put_u64(std::string& out, uint64_t v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
void put_f64(std::string& out, double v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
void put_text(std::string& out, const std::string& s) {
  put_u64(out, s.size());
  out += s;
}
void put_texts(std::string& out, const std::vector<std::string>& texts) {
  put_u64(out, texts.size());
  for (const auto& t : texts) put_text(out, t);
}

std::string encode_record(const EvalRecord& r) {
  std::string out;
  put_text(out, r.stage);
  put_u64(out, static_cast<uint64_t>(static_cast<int64_t>(r.epoch)));
  put_text(out, r.test_set);
  put_text(out, r.checkpoint);
  put_texts(out, r.ids);
  put_texts(out, r.prompts);
  put_texts(out, r.generations);
  put_u64(out, r.metrics.size());
  for (size_t m = 0; m < r.metrics.size(); ++m) {
    put_text(out, r.metrics[m].first);
    put_u64(out, r.metrics[m].second.size());
    for (double v : r.metrics[m].second) put_f64(out, v);
    const auto& a = r.aggregates[m].second;
    put_f64(out, a.mean);
    put_u64(out, a.count);
    put_f64(out, a.ci_low);
    put_f64(out, a.ci_high);
  }
  return out;
}

struct RecordBytes {
  const std::string& bytes;
  size_t pos = 0;
  template <typename T>
  T scalar() {
    if (bytes.size() - pos < sizeof(T)) throw Error("evaluation archive reader: reply cut short");
    T v;
    std::memcpy(&v, bytes.data() + pos, sizeof v);
    pos += sizeof v;
    return v;
  }
  std::string text() {
    const auto n = scalar<uint64_t>();
    if (bytes.size() - pos < n) throw Error("evaluation archive reader: reply cut short");
    std::string s = bytes.substr(pos, n);
    pos += n;
    return s;
  }
  std::vector<std::string> texts() {
    std::vector<std::string> out(scalar<uint64_t>());
    for (auto& t : out) t = text();
    return out;
  }
};

EvalRecord decode_record(const std::string& bytes) {
  RecordBytes in{bytes};
  EvalRecord r;
  r.stage = in.text();
  r.epoch = static_cast<int>(static_cast<int64_t>(in.scalar<uint64_t>()));
  r.test_set = in.text();
  r.checkpoint = in.text();
  r.ids = in.texts();
  r.prompts = in.texts();
  r.generations = in.texts();
  const auto metrics = in.scalar<uint64_t>();
  for (uint64_t m = 0; m < metrics; ++m) {
    std::string name = in.text();
    std::vector<double> values(in.scalar<uint64_t>());
    for (auto& v : values) v = in.scalar<double>();
    rewards::Aggregate a;
    a.mean = in.scalar<double>();
    a.count = in.scalar<uint64_t>();
    a.ci_low = in.scalar<double>();
    a.ci_high = in.scalar<double>();
    r.metrics.push_back({name, std::move(values)});
    r.aggregates.push_back({std::move(name), a});
  }
  return r;
}

EvalRecord read_archive_here(const std::string& path) {
  silence_hdf5();
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) fail_at(path, "", "no such evaluation archive");
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    fail_at(path, "", "not an HDF5 file");
  }
  Handle h5(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!h5.ok()) fail_hdf5(path, "", "cannot open");

  auto root_attr = [](const char* name) { return std::string("attribute '") + name + "'"; };
  long long version = read_number_attribute<long long>(
      h5.get(), "format_version", H5T_INTEGER, H5T_NATIVE_LLONG, path, root_attr("format_version"));
  if (version != kEvalArchiveFormatVersion)
    fail_at(path, root_attr("format_version"),
            "is " + std::to_string(version) + ", this build reads version " +
                std::to_string(kEvalArchiveFormatVersion));
  EvalRecord record;
  record.stage = read_string_attribute(h5.get(), "stage", path, root_attr("stage"));
  record.epoch = static_cast<int>(read_number_attribute<long long>(
      h5.get(), "epoch", H5T_INTEGER, H5T_NATIVE_LLONG, path, root_attr("epoch")));
  record.test_set = read_string_attribute(h5.get(), "test_set", path, root_attr("test_set"));
  record.checkpoint = read_string_attribute(h5.get(), "checkpoint", path, root_attr("checkpoint"));

  record.ids = read_strings(h5.get(), "ids", path);
  record.prompts = read_strings(h5.get(), "prompts", path);
  check_length(record.prompts.size(), record.ids.size(), path, "dataset 'prompts'");
  record.generations = read_strings(h5.get(), "generations", path);
  check_length(record.generations.size(), record.ids.size(), path, "dataset 'generations'");

  if (H5Lexists(h5.get(), "metrics", H5P_DEFAULT) <= 0) fail_at(path, "group 'metrics'", "missing");
  Handle group(H5Gopen2(h5.get(), "metrics", H5P_DEFAULT), H5Gclose);
  if (!group.ok()) fail_hdf5(path, "group 'metrics'", "cannot open as a group");
  H5G_info_t info;
  if (H5Gget_info(group.get(), &info) < 0) fail_hdf5(path, "group 'metrics'", "cannot list");
  // Files written by other tools may not track creation order; fall back to name order then.
  H5_index_t order = H5_INDEX_CRT_ORDER;
  {
    Handle gcpl(H5Gget_create_plist(group.get()), H5Pclose);
    unsigned flags = 0;
    if (H5Pget_link_creation_order(gcpl.get(), &flags) < 0 || !(flags & H5P_CRT_ORDER_INDEXED))
      order = H5_INDEX_NAME;
  }
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    ssize_t size =
        H5Lget_name_by_idx(group.get(), ".", order, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (size < 0) fail_hdf5(path, "group 'metrics'", "cannot read link " + std::to_string(i));
    std::string name(static_cast<std::size_t>(size), '\0');
    H5Lget_name_by_idx(group.get(), ".", order, H5_ITER_INC, i, name.data(), name.size() + 1,
                       H5P_DEFAULT);
    auto [values, aggregate] = read_metric(group.get(), name, record.ids.size(), path);
    record.metrics.push_back({name, std::move(values)});
    record.aggregates.push_back({name, aggregate});
  }
  validate_eval_record(record, path);
  return record;
}

}  // namespace

EvalRecord read_eval_archive(const std::string& path) {
  // libhdf5 trusts the addresses a file holds: a corrupted archive can make it copy from
  // anywhere (a flipped byte in the global heap of the strings ends in SIGSEGV inside H5Dread).
  // The archive is read in a child process, and such a crash is one line naming the file.
  return decode_record(isolated_call([&] { return encode_record(read_archive_here(path)); }, path,
                                     "corrupt HDF5 archive: the HDF5 library crashed reading it"));
}

}  // namespace citeforge::trainer
