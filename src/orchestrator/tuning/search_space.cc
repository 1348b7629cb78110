// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/tuning/search_space.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <unordered_map>

namespace rd::orch::tune {

namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;

uint64_t splitmixFinalize(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

double clampUnit(double u) {
  return std::isnan(u) ? 0.5 : std::clamp(u, 0.0, 1.0);
}

bool sameNumber(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(b));
}

}  // namespace

Rng::Rng(uint64_t seed) {
  for (uint64_t& word : s_) {
    seed += kGolden;
    word = splitmixFinalize(seed);
  }
}

uint64_t Rng::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

double Rng::normal() {
  const double u1 = 1.0 - uniform();  // (0, 1]: log is finite
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

uint64_t mixSeed(uint64_t seed, uint64_t index) {
  return splitmixFinalize(seed ^ splitmixFinalize(index + kGolden));
}

std::string assignmentKey(const Assignment& assignment) {
  std::vector<std::string> parts;
  parts.reserve(assignment.size());
  for (const ParameterValue& value : assignment)
    parts.push_back(value.id + "=" + formatValue(value));
  // Sorted: the same values listed in another order are the same point.
  std::sort(parts.begin(), parts.end());
  std::string key;
  for (const std::string& part : parts) key += part + '\n';
  return key;
}

std::unordered_set<std::string> triedKeys(const std::vector<Observation>& done,
                                          const std::vector<Assignment>& pending) {
  std::unordered_set<std::string> keys;
  for (const Observation& trial : done) keys.insert(assignmentKey(trial.parameters));
  for (const Assignment& trial : pending) keys.insert(assignmentKey(trial));
  return keys;
}

SearchSpace::SearchSpace(const std::vector<ParameterSpec>& parameters) {
  for (const ParameterSpec& spec : parameters) addNode(spec, -1, nullptr);
}

void SearchSpace::addNode(const ParameterSpec& spec, int parent,
                          const ConditionalParameter* condition) {
  Node node;
  node.spec = spec;
  node.spec.conditionals.clear();
  node.parent = parent;
  if (condition != nullptr) {
    node.when_categories = condition->parent_categories;
    node.when_values = condition->parent_values;
  }
  Block block{dims_, 1, false};
  switch (spec.kind) {
    case ParameterKind::kCategorical:
      block.width = spec.categories.size();
      block.one_hot = true;
      break;
    case ParameterKind::kInteger:
      // Each integer owns the unit interval around it, so a linear scale draws all equally often.
      node.lo = std::ceil(spec.min) - 0.5;
      node.hi = std::floor(spec.max) + 0.5;
      break;
    case ParameterKind::kDouble:
      node.lo = spec.min;
      node.hi = spec.max;
      break;
    case ParameterKind::kDiscrete:
      node.lo = spec.values.empty() ? 0 : spec.values.front();
      node.hi = spec.values.empty() ? 0 : spec.values.back();
      break;
  }
  // A log scale needs a positive range; the spec's validation requires it, and a range that is
  // not is taken as linear rather than producing NaNs.
  node.log = spec.scale == ScaleType::kLog && node.lo > 0;
  node.reverse = spec.scale == ScaleType::kReverseLog && node.lo > 0;
  for (double value : spec.values) node.value_units.push_back(toUnit(node, value));
  nodes_.push_back(std::move(node));
  blocks_.push_back(block);
  dims_ += block.width;
  const int index = static_cast<int>(nodes_.size()) - 1;
  for (const ConditionalParameter& conditional : spec.conditionals) {
    for (const ParameterSpec& child : conditional.children) addNode(child, index, &conditional);
  }
}

double SearchSpace::toUnit(const Node& node, double x) const {
  if (!(node.hi > node.lo)) return 0.5;
  x = std::clamp(x, node.lo, node.hi);
  if (node.log) return std::log(x / node.lo) / std::log(node.hi / node.lo);
  if (node.reverse) {
    return 1.0 - std::log((node.hi + node.lo - x) / node.lo) / std::log(node.hi / node.lo);
  }
  return (x - node.lo) / (node.hi - node.lo);
}

double SearchSpace::fromUnit(const Node& node, double u) const {
  if (!(node.hi > node.lo)) return node.lo;
  u = clampUnit(u);
  double x = node.lo + u * (node.hi - node.lo);
  if (node.log) x = node.lo * std::exp(u * std::log(node.hi / node.lo));
  if (node.reverse)
    x = node.hi + node.lo - node.lo * std::exp((1.0 - u) * std::log(node.hi / node.lo));
  return std::clamp(x, node.lo, node.hi);
}

bool SearchSpace::activates(const Node& node, const std::vector<Choice>& choices) const {
  if (node.parent < 0) return true;
  const Choice& parent = choices[static_cast<size_t>(node.parent)];
  if (!parent.active) return false;
  const ParameterSpec& parent_spec = nodes_[static_cast<size_t>(node.parent)].spec;
  if (parent_spec.kind == ParameterKind::kCategorical) {
    const std::string& category = parent_spec.categories[parent.category];
    return std::find(node.when_categories.begin(), node.when_categories.end(), category) !=
           node.when_categories.end();
  }
  return std::any_of(node.when_values.begin(), node.when_values.end(),
                     [&](double value) { return sameNumber(parent.number, value); });
}

std::vector<SearchSpace::Choice> SearchSpace::choose(std::span<const double> x) const {
  std::vector<Choice> choices(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& node = nodes_[i];
    const Block& block = blocks_[i];
    Choice& choice = choices[i];
    choice.active = activates(node, choices) && block.width > 0;
    if (!choice.active) continue;
    const double u = clampUnit(x[block.offset]);
    switch (node.spec.kind) {
      case ParameterKind::kCategorical:
        for (size_t c = 1; c < block.width; ++c) {
          if (x[block.offset + c] > x[block.offset + choice.category]) choice.category = c;
        }
        break;
      case ParameterKind::kDouble:
        choice.number = std::clamp(fromUnit(node, u), node.spec.min, node.spec.max);
        break;
      case ParameterKind::kInteger:
        choice.number = std::clamp(std::round(fromUnit(node, u)), std::ceil(node.spec.min),
                                   std::floor(node.spec.max));
        break;
      case ParameterKind::kDiscrete: {
        if (node.spec.values.empty()) {
          choice.active = false;
          break;
        }
        size_t nearest = 0;
        for (size_t k = 1; k < node.value_units.size(); ++k) {
          if (std::fabs(node.value_units[k] - u) < std::fabs(node.value_units[nearest] - u)) {
            nearest = k;
          }
        }
        choice.number = node.spec.values[nearest];
        break;
      }
    }
  }
  return choices;
}

std::vector<double> SearchSpace::encodeChoices(const std::vector<Choice>& choices) const {
  std::vector<double> x(dims_, 0.0);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Block& block = blocks_[i];
    if (block.one_hot) {
      if (choices[i].active) x[block.offset + choices[i].category] = 1.0;
    } else {
      x[block.offset] = choices[i].active ? toUnit(nodes_[i], choices[i].number) : kInactive;
    }
  }
  return x;
}

std::vector<double> SearchSpace::encode(const Assignment& assignment) const {
  std::unordered_map<std::string, const ParameterValue*> by_id;
  for (const ParameterValue& value : assignment) by_id.emplace(value.id, &value);
  std::vector<Choice> choices(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& node = nodes_[i];
    const auto found = by_id.find(node.spec.id);
    if (found == by_id.end() || !activates(node, choices)) continue;
    const ParameterValue& value = *found->second;
    Choice& choice = choices[i];
    if (node.spec.kind == ParameterKind::kCategorical) {
      const auto& categories = node.spec.categories;
      const auto at = std::find(categories.begin(), categories.end(), value.text);
      if (at == categories.end()) continue;
      choice.category = static_cast<size_t>(at - categories.begin());
    } else {
      if (value.is_text) continue;
      choice.number = value.number;
    }
    choice.active = true;
  }
  return encodeChoices(choices);
}

Assignment SearchSpace::decode(std::span<const double> x) const {
  const std::vector<Choice> choices = choose(x);
  Assignment assignment;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!choices[i].active) continue;
    const ParameterSpec& spec = nodes_[i].spec;
    ParameterValue value;
    value.id = spec.id;
    if (spec.kind == ParameterKind::kCategorical) {
      value.is_text = true;
      value.text = spec.categories[choices[i].category];
    } else {
      value.number = choices[i].number;
    }
    assignment.push_back(std::move(value));
  }
  return assignment;
}

std::vector<double> SearchSpace::canonical(std::span<const double> x) const {
  return encodeChoices(choose(x));
}

std::vector<double> SearchSpace::sampleUnit(Rng& rng) const {
  std::vector<double> x(dims_);
  for (double& coordinate : x) coordinate = rng.uniform();
  return x;
}

std::optional<Assignment> sampleUntried(const SearchSpace& space, const Grid& grid,
                                        const std::unordered_set<std::string>& tried, Rng& rng) {
  constexpr int kDraws = 32;
  Assignment last;
  for (int draw = 0; draw < kDraws; ++draw) {
    last = space.sample(rng);
    if (tried.count(assignmentKey(last)) == 0) return last;
  }
  const size_t size = grid.size();
  if (size == 0) return last;  // infinite: a repeat is as good as any other point
  return grid.untriedFrom(static_cast<size_t>(rng.next() % size), tried);
}

}  // namespace rd::orch::tune
