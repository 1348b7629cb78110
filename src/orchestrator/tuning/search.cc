// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/tuning/search.h"

#include <chrono>
#include <random>

#include "orchestrator/tuning/search_space.h"

namespace rd::orch::tune {

namespace {

// A seed for a study that gave none: the clock and the system's entropy, drawn once per searcher
// so its suggestions stay consistent with each other.
uint64_t clockSeed() {
  const auto now = std::chrono::system_clock::now().time_since_epoch().count();
  std::random_device device;
  const uint64_t entropy = (static_cast<uint64_t>(device()) << 32) | device();
  const uint64_t seed = mixSeed(static_cast<uint64_t>(now), entropy);
  return seed == 0 ? 1 : seed;
}

}  // namespace

std::unique_ptr<Searcher> makeSearcher(const StudySpec& study) {
  const uint64_t seed = study.seed != 0 ? study.seed : clockSeed();
  const Goal goal = study.metrics.empty() ? Goal::kMaximize : study.metrics.front().goal;
  switch (study.algorithm) {
    case Algorithm::kGrid: return makeGridSearcher(study.parameters);
    case Algorithm::kRandom: return makeRandomSearcher(study.parameters, seed);
    case Algorithm::kBayesian: break;
  }
  return makeBayesSearcher(study.parameters, goal, seed);
}

size_t gridSize(const std::vector<ParameterSpec>& parameters) {
  return Grid(parameters).size();
}

}  // namespace rd::orch::tune
