// SPDX-License-Identifier: BSD-3-Clause
// The parameters of a study as points of the unit cube, where the searchers work, and the pieces
// the searchers share: a portable random generator, trial keys, the grid's enumeration and the
// searchers' constructors (search.cc picks one).
//
// Encoding: each numeric parameter (double, integer, discrete) is one coordinate, its value after
// the scale transform mapped to [0, 1]; each categorical parameter is one coordinate per category
// (one-hot). A conditional child's coordinates hold a fixed neutral value while it is inactive, so
// points that differ only in inactive parameters coincide.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "orchestrator/tuning/search.h"
#include "orchestrator/tuning/study.h"

namespace rd::orch::tune {

/** xoshiro256** seeded through splitmix64: the same sequence on every platform and library. */
class Rng {
 public:
  explicit Rng(uint64_t seed);
  /** 64 uniform random bits. */
  uint64_t next();
  /** Uniform in [0, 1). */
  double uniform();
  /** Standard normal. */
  double normal();

 private:
  uint64_t s_[4];
};

/** The seed of stream @p index of @p seed (trial i of a study): unrelated streams per index. */
uint64_t mixSeed(uint64_t seed, uint64_t index);

/** A text two assignments share iff they set the same parameters to the same values. */
std::string assignmentKey(const Assignment& assignment);

/** The keys of every trial so far, finished or running. */
std::unordered_set<std::string> triedKeys(const std::vector<Observation>& done,
                                          const std::vector<Assignment>& pending);

/** The unit-cube view of a study's parameters (see the file comment). */
class SearchSpace {
 public:
  /** The coordinates of one parameter (parameters flattened parents first, as assigned). */
  struct Block {
    size_t offset = 0;
    size_t width = 1;      // the number of categories for a one-hot block, else 1
    bool one_hot = false;  // categorical
  };

  /** The coordinate of a numeric parameter while inactive. */
  static constexpr double kInactive = 0.5;

  explicit SearchSpace(const std::vector<ParameterSpec>& parameters);

  /** The number of coordinates. */
  size_t dims() const { return dims_; }
  const std::vector<Block>& blocks() const { return blocks_; }

  /**
   * The point of @p assignment. Values are clamped to their ranges; an active parameter the
   * assignment lacks, and every inactive one, gets the neutral encoding.
   */
  std::vector<double> encode(const Assignment& assignment) const;

  /**
   * The assignment at @p x (coordinates clamped to [0, 1]): integers rounded, discrete values
   * snapped to the nearest listed value in the transformed space, categories by the largest
   * coordinate; children only where their parent's value activates them.
   */
  Assignment decode(std::span<const double> x) const;

  /** encode(decode(x)), without building the assignment: the point @p x stands for. */
  std::vector<double> canonical(std::span<const double> x) const;

  /** A point drawn uniformly from the cube. */
  std::vector<double> sampleUnit(Rng& rng) const;

  /** decode(sampleUnit(rng)): uniform in the transformed space. */
  Assignment sample(Rng& rng) const { return decode(sampleUnit(rng)); }

 private:
  struct Node {
    ParameterSpec spec;  // without its conditionals, which are nodes of their own
    int parent = -1;     // the index of the parent node, -1 at the top level
    std::vector<std::string> when_categories;  // the parent values that activate this node
    std::vector<double> when_values;
    double lo = 0, hi = 0;            // the continuous range the unit interval maps onto
    bool log = false;                 // log transform (the scale asked it and lo > 0)
    bool reverse = false;             // reverse log
    std::vector<double> value_units;  // discrete: each listed value's coordinate
  };
  // A node's value in a decoded point: active or not, its number or category index.
  struct Choice {
    bool active = false;
    double number = 0;
    size_t category = 0;
  };

  void addNode(const ParameterSpec& spec, int parent, const ConditionalParameter* condition);
  bool activates(const Node& node, const std::vector<Choice>& choices) const;
  double toUnit(const Node& node, double x) const;
  double fromUnit(const Node& node, double u) const;
  std::vector<Choice> choose(std::span<const double> x) const;
  std::vector<double> encodeChoices(const std::vector<Choice>& choices) const;

  std::vector<Node> nodes_;
  std::vector<Block> blocks_;  // one per node
  size_t dims_ = 0;
};

/**
 * The grid of a space without double parameters: every combination of active values, each once,
 * in a fixed order (the first parameter varies slowest, a parent's children right after it).
 */
class Grid {
 public:
  explicit Grid(const std::vector<ParameterSpec>& parameters);
  ~Grid();
  Grid(Grid&&) noexcept;
  Grid& operator=(Grid&&) noexcept;

  /** The number of points; 0 if a double parameter exists; saturates at SIZE_MAX. */
  size_t size() const;

  /** The point at @p index (< size()). */
  Assignment at(size_t index) const;

  /** The first point whose key is not in @p tried; empty when every point was tried. */
  std::optional<Assignment> firstUntried(const std::unordered_set<std::string>& tried) const;

  /** The first untried point at or after @p start, wrapping around; empty when none is left. */
  std::optional<Assignment> untriedFrom(size_t start,
                                        const std::unordered_set<std::string>& tried) const;

  struct List;  // a list of sibling parameters (grid_search.cc)

 private:
  std::unique_ptr<List> root_;
};

/**
 * A random point not in @p tried: a few draws from @p rng, then, in a finite space, the first
 * untried grid point after a random one. Empty when a finite space is exhausted; in an infinite
 * one, the last draw if every draw was tried.
 */
std::optional<Assignment> sampleUntried(const SearchSpace& space, const Grid& grid,
                                        const std::unordered_set<std::string>& tried, Rng& rng);

std::unique_ptr<Searcher> makeGridSearcher(const std::vector<ParameterSpec>& parameters);
std::unique_ptr<Searcher> makeRandomSearcher(const std::vector<ParameterSpec>& parameters,
                                             uint64_t seed);
std::unique_ptr<Searcher> makeBayesSearcher(const std::vector<ParameterSpec>& parameters, Goal goal,
                                            uint64_t seed);

}  // namespace rd::orch::tune
