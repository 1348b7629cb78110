// Just enough JSON writing for the replicas' CLUSTER_SPEC / TF_CONFIG and reducectl's job record.
#pragma once

#include <string>
#include <vector>

namespace rd::orch {

/** @p text as a JSON string literal: quoted, with quotes, backslashes and controls escaped. */
std::string jsonString(const std::string& text);

/** ["a", "b"]: each element quoted with jsonString. */
std::string jsonStringArray(const std::vector<std::string>& items);

}  // namespace rd::orch
