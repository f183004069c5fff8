// The rule-based teacher of the synthetic world: which documents its answer cites. It starts
// from the perfect citation set and makes two kinds of mistakes, like GPT-3.5 in RAGE: it drops
// relevant citations (hurting recall) and adds a wrong one (hurting precision; on a question no
// document answers, it answers anyway from a wrong document instead of abstaining).
#pragma once

#include <vector>

#include "data/example.h"
#include "data/random.h"

namespace citeforge::data {

struct TeacherPlan {
  double keep = 1;  // probability of keeping each relevant citation
  double add = 0;   // probability of adding one wrong citation
};

// The plan whose expected per-example precision and recall (docs/design.md §3, averaged over
// examples) equal the targets, given that a question has no relevant document with probability
// `no_relevant_rate` and otherwise a number drawn uniformly from [min_relevant, max_relevant].
// Throws citeforge::Error when the two targets cannot be reached together.
TeacherPlan calibrate_teacher(double precision, double recall, double no_relevant_rate,
                              int min_relevant, int max_relevant);

// Expected (precision, recall) of `plan` under the same assumptions; used by calibration and
// by tests.
std::pair<double, double> expected_teacher_scores(const TeacherPlan& plan, double no_relevant_rate,
                                                  int min_relevant, int max_relevant);

struct TeacherSource {
  Label label = Label::unknown;
  bool same_attribute = false;  // states the asked attribute of another entity
};

struct TeacherChoice {
  std::vector<int> keys;  // cited keys, ascending (1-based)
  int wrong_key = 0;      // the wrong citation among `keys`, 0 if none
  bool abstain = false;   // no relevant document and no wrong citation: admit it
};

// Draws the teacher's citations for one example whose sources are `sources` (key = index + 1).
// The wrong citation prefers seemingly relevant documents (3 in 4) and, on an unanswerable
// question, one that states the asked attribute, because that is the mistake a reader makes.
TeacherChoice teacher_citations(const std::vector<TeacherSource>& sources, const TeacherPlan& plan,
                                Rng& rng);

}  // namespace citeforge::data
