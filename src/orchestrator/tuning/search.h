// SPDX-License-Identifier: BSD-3-Clause
// The searchers of a tuning job: grid, random and Bayesian optimization. A searcher holds no
// history of its own: each suggestion is computed from the trials so far (finished and still
// running), so a resumed tuning job continues where it stopped, and a seed makes the sequence
// reproducible.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "orchestrator/tuning/study.h"

namespace rd::orch::tune {

/** A trial the searcher learns from. */
struct Observation {
  Assignment parameters;
  // The objective (the study's first metric) as measured; empty for a trial that failed or
  // reported nothing (infeasible): such points are tried, not modelled.
  std::optional<double> value;
};

class Searcher {
 public:
  virtual ~Searcher() = default;

  /**
   * The next trial's parameters, given the finished trials @p done and those still running
   * @p pending (in order of their start). Empty when the space is exhausted (a grid that was
   * fully tried). Deterministic for a given seed and history.
   */
  virtual std::optional<Assignment> suggest(const std::vector<Observation>& done,
                                            const std::vector<Assignment>& pending) = 0;
};

/** The searcher of @p study.algorithm over @p study.parameters, for the first metric's goal. */
std::unique_ptr<Searcher> makeSearcher(const StudySpec& study);

/** The number of grid points (every combination of active values); 0 if a double is present. */
size_t gridSize(const std::vector<ParameterSpec>& parameters);

}  // namespace rd::orch::tune
