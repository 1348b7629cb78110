// SPDX-License-Identifier: BSD-3-Clause
// Grid search: every combination of the active values, in a fixed order, each tried once.
//
// The grid is a tree: a list of sibling parameters multiplies (mixed radix, the first parameter
// the most significant digit); a parameter adds up its values, each value counting the grid of
// the children it activates (1 when none). Values without children are counted arithmetically,
// so a wide integer range costs nothing until its points are asked for.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "orchestrator/tuning/search_space.h"

namespace rd::orch::tune {

namespace {

constexpr size_t kMaxSize = std::numeric_limits<size_t>::max();

size_t saturatingAdd(size_t a, size_t b) {
  return a > kMaxSize - b ? kMaxSize : a + b;
}
size_t saturatingMul(size_t a, size_t b) {
  if (a == 0 || b == 0) return 0;
  return a > kMaxSize / b ? kMaxSize : a * b;
}

struct GridParam {
  struct Branch {
    size_t value = 0;                      // the index of the value that activates the children
    std::unique_ptr<Grid::List> children;  // never empty
  };
  ParameterSpec spec;            // without conditionals
  size_t count = 0;              // the number of values
  std::vector<Branch> branches;  // ascending value index
  size_t size = 0;               // points of this parameter with its active children
};

}  // namespace

struct Grid::List {
  std::vector<GridParam> params;
  std::vector<size_t> suffix;  // suffix[i]: the points of params[i + 1 ..]
  size_t size = 1;
  bool has_double = false;  // anywhere below: the grid is empty
};

namespace {

std::unique_ptr<Grid::List> buildList(const std::vector<ParameterSpec>& specs);

bool sameNumber(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(b));
}

// The indices of the values of @p spec that @p conditional's parent values name.
std::set<size_t> activatingValues(const ParameterSpec& spec,
                                  const ConditionalParameter& conditional) {
  std::set<size_t> indices;
  if (spec.kind == ParameterKind::kCategorical) {
    for (const std::string& category : conditional.parent_categories) {
      const auto at = std::find(spec.categories.begin(), spec.categories.end(), category);
      if (at != spec.categories.end())
        indices.insert(static_cast<size_t>(at - spec.categories.begin()));
    }
    return indices;
  }
  for (double value : conditional.parent_values) {
    if (spec.kind == ParameterKind::kInteger) {
      const double first = std::ceil(spec.min);
      if (std::nearbyint(value) == value && value >= first && value <= std::floor(spec.max)) {
        indices.insert(static_cast<size_t>(value - first));
      }
    } else if (spec.kind == ParameterKind::kDiscrete) {
      for (size_t k = 0; k < spec.values.size(); ++k) {
        if (sameNumber(spec.values[k], value)) indices.insert(k);
      }
    }
  }
  return indices;
}

size_t valueCount(const ParameterSpec& spec) {
  switch (spec.kind) {
    case ParameterKind::kCategorical: return spec.categories.size();
    case ParameterKind::kDiscrete: return spec.values.size();
    case ParameterKind::kDouble: return 0;
    case ParameterKind::kInteger: {
      const double span = std::floor(spec.max) - std::ceil(spec.min);
      if (!(span >= 0)) return 0;
      return span >= 1e18 ? kMaxSize : static_cast<size_t>(span) + 1;
    }
  }
  return 0;
}

GridParam buildParam(const ParameterSpec& spec, bool& has_double) {
  GridParam param;
  param.spec = spec;
  param.spec.conditionals.clear();
  param.count = valueCount(spec);
  has_double = has_double || spec.kind == ParameterKind::kDouble;
  std::map<size_t, std::vector<ParameterSpec>> children;
  for (const ConditionalParameter& conditional : spec.conditionals) {
    for (size_t index : activatingValues(spec, conditional)) {
      auto& list = children[index];
      list.insert(list.end(), conditional.children.begin(), conditional.children.end());
    }
  }
  param.size = param.count;
  for (auto& [index, specs] : children) {
    if (specs.empty()) continue;
    GridParam::Branch branch{index, buildList(specs)};
    has_double = has_double || branch.children->has_double;
    // The value counts its children's points instead of 1 (a list without doubles has >= 1).
    param.size = branch.children->size == kMaxSize || param.size == kMaxSize
                     ? kMaxSize
                     : saturatingAdd(param.size - 1, branch.children->size);
    param.branches.push_back(std::move(branch));
  }
  return param;
}

std::unique_ptr<Grid::List> buildList(const std::vector<ParameterSpec>& specs) {
  auto list = std::make_unique<Grid::List>();
  for (const ParameterSpec& spec : specs)
    list->params.push_back(buildParam(spec, list->has_double));
  list->suffix.assign(list->params.size(), 1);
  for (size_t i = list->params.size(); i-- > 1;) {
    list->suffix[i - 1] = saturatingMul(list->suffix[i], list->params[i].size);
  }
  list->size = list->params.empty() ? 1 : saturatingMul(list->suffix[0], list->params[0].size);
  return list;
}

ParameterValue valueAt(const ParameterSpec& spec, size_t index) {
  ParameterValue value;
  value.id = spec.id;
  switch (spec.kind) {
    case ParameterKind::kCategorical:
      value.is_text = true;
      value.text = spec.categories[index];
      break;
    case ParameterKind::kDiscrete: value.number = spec.values[index]; break;
    case ParameterKind::kInteger:
      value.number = std::ceil(spec.min) + static_cast<double>(index);
      break;
    case ParameterKind::kDouble: break;
  }
  return value;
}

void appendList(const Grid::List& list, size_t index, Assignment& out);

void appendParam(const GridParam& param, size_t index, Assignment& out) {
  size_t value = 0;  // the value index at grid position `position`
  size_t position = 0;
  for (const GridParam::Branch& branch : param.branches) {
    const size_t plain = branch.value - value;  // values without children, one point each
    if (index < position + plain) {
      out.push_back(valueAt(param.spec, value + (index - position)));
      return;
    }
    position += plain;
    if (index < position + branch.children->size) {
      out.push_back(valueAt(param.spec, branch.value));
      appendList(*branch.children, index - position, out);
      return;
    }
    position += branch.children->size;
    value = branch.value + 1;
  }
  out.push_back(valueAt(param.spec, value + (index - position)));
}

void appendList(const Grid::List& list, size_t index, Assignment& out) {
  for (size_t i = 0; i < list.params.size(); ++i) {
    const size_t digit = index / list.suffix[i];
    index %= list.suffix[i];
    appendParam(list.params[i], digit, out);
  }
}

class GridSearcher final : public Searcher {
 public:
  explicit GridSearcher(const std::vector<ParameterSpec>& parameters) : grid_(parameters) {}

  std::optional<Assignment> suggest(const std::vector<Observation>& done,
                                    const std::vector<Assignment>& pending) override {
    return grid_.firstUntried(triedKeys(done, pending));
  }

 private:
  Grid grid_;
};

}  // namespace

Grid::Grid(const std::vector<ParameterSpec>& parameters) : root_(buildList(parameters)) {}
Grid::~Grid() = default;
Grid::Grid(Grid&&) noexcept = default;
Grid& Grid::operator=(Grid&&) noexcept = default;

size_t Grid::size() const {
  return root_->has_double ? 0 : root_->size;
}

Assignment Grid::at(size_t index) const {
  Assignment point;
  appendList(*root_, index, point);
  return point;
}

std::optional<Assignment> Grid::firstUntried(const std::unordered_set<std::string>& tried) const {
  return untriedFrom(0, tried);
}

std::optional<Assignment> Grid::untriedFrom(size_t start,
                                            const std::unordered_set<std::string>& tried) const {
  const size_t points = size();
  // Each tried key hides at most one point: at most tried.size() + 1 steps unless exhausted.
  size_t index = points == 0 ? 0 : start % points;
  for (size_t step = 0; step < points; ++step) {
    Assignment point = at(index);
    if (tried.count(assignmentKey(point)) == 0) return point;
    index = index + 1 == points ? 0 : index + 1;
  }
  return std::nullopt;
}

std::unique_ptr<Searcher> makeGridSearcher(const std::vector<ParameterSpec>& parameters) {
  return std::make_unique<GridSearcher>(parameters);
}

}  // namespace rd::orch::tune
