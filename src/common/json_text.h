// SPDX-License-Identifier: BSD-3-Clause
// Just enough JSON writing: the replicas' CLUSTER_SPEC / TF_CONFIG, reducectl's job record, the
// library's event lines (events.h).
#pragma once

#include <string>
#include <vector>

namespace rd {

/** @p text as a JSON string literal: quoted, with quotes, backslashes and controls escaped. */
std::string jsonString(const std::string& text);

/** ["a", "b"]: each element quoted with jsonString. */
std::string jsonStringArray(const std::vector<std::string>& items);

}  // namespace rd
