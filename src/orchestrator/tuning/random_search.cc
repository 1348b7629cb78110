// SPDX-License-Identifier: BSD-3-Clause
// Random search: each trial drawn uniformly in the transformed space, from a generator seeded by
// (seed, trial number), so a resumed study draws what an uninterrupted one would have.
#include "orchestrator/tuning/search_space.h"

namespace rd::orch::tune {

namespace {

class RandomSearcher final : public Searcher {
 public:
  RandomSearcher(const std::vector<ParameterSpec>& parameters, uint64_t seed)
      : space_(parameters), grid_(parameters), seed_(seed) {}

  std::optional<Assignment> suggest(const std::vector<Observation>& done,
                                    const std::vector<Assignment>& pending) override {
    Rng rng(mixSeed(seed_, done.size() + pending.size()));
    // A point already tried teaches nothing new: draw again (finite spaces run out).
    return sampleUntried(space_, grid_, triedKeys(done, pending), rng);
  }

 private:
  SearchSpace space_;
  Grid grid_;
  uint64_t seed_;
};

}  // namespace

std::unique_ptr<Searcher> makeRandomSearcher(const std::vector<ParameterSpec>& parameters,
                                             uint64_t seed) {
  return std::make_unique<RandomSearcher>(parameters, seed);
}

}  // namespace rd::orch::tune
