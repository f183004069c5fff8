// The evaluation archive (docs/design.md §5): one HDF5 file per (stage, epoch, test set) at
// RUN_DIR/eval/<stage>-<epoch>/<test set>.h5, holding everything needed to re-table a run
// without the model: the example ids, prompts and generations, a float64 column per metric, and
// the aggregates.
//
// Layout (format version 1):
//   /                 attributes: format_version (int), stage, test_set, checkpoint (UTF-8
//                     strings), epoch (int)
//   /ids, /prompts, /generations   [n] variable-length UTF-8 strings
//   /metrics/<name>   [n] float64, in report order (the group tracks creation order), with the
//                     aggregate as attributes mean, ci_low, ci_high (float64) and count (int)
#pragma once

#include <string>

#include "trainer/eval/eval_record.h"

namespace citeforge::trainer {

constexpr int kEvalArchiveFormatVersion = 1;

// Writes `record` to `path` through a temporary file renamed into place, so a reader never sees
// a half-written archive. The record is validated first (stage, names, column lengths, no NUL
// byte in a string); problems are citeforge::Error naming the file and the field.
void write_eval_archive(const std::string& path, const EvalRecord& record);

// Reads an archive back exactly as written. A missing file, a file that is not HDF5, a missing
// or mistyped dataset or attribute, or columns of different lengths are citeforge::Error naming
// the file and the dataset or attribute.
EvalRecord read_eval_archive(const std::string& path);

// Throws citeforge::Error (prefixed by `file`) when `record` could not be archived and read back
// as itself: an unknown stage, a negative epoch or a base epoch other than 0, a test set that is
// not a plain file name, columns of other lengths than `ids`, metrics and aggregates that differ.
void validate_eval_record(const EvalRecord& record, const std::string& file);

}  // namespace citeforge::trainer
