// SPDX-License-Identifier: BSD-3-Clause
// The job spec's reader as a part other specs embed (a tuning job's trialJobSpec), and the
// loading and error formatting every spec of reducectl shares.
#pragma once

#include <functional>
#include <string>

#include <yaml-cpp/yaml.h>

#include "orchestrator/job_spec.h"
#include "orchestrator/spec_fields.h"

namespace rd::orch {

/**
 * Reads a job spec from the map @p top (its path prefixes every field's). @p name_required:
 * displayName must be given (a standalone job); else it may be absent (a tuning job's trials).
 * Throws spec::SpecError.
 */
void readJobSpecField(const spec::Field& top, JobSpec* spec, bool name_required);

/** "SOURCE:LINE:COLUMN: PATH: message" (1-based; a null mark is 1:1). */
std::string formatSpecError(const std::string& source, const YAML::Mark& mark,
                            const std::string& path, const std::string& message);

/**
 * Loads the one YAML document of @p text and calls @p read on its root; an empty text, a second
 * document, YAML syntax and whatever @p read throws become *error, formatted. @p expected says
 * what an empty spec should have held ("a map with displayName and workerPoolSpecs").
 */
bool parseSpecText(const std::string& text, const std::string& source, const std::string& expected,
                   const std::function<void(const spec::Field&)>& read, std::string* error);

/** Reads the file at @p path into @p text; @p what names it in errors ("job spec"). */
bool readSpecFile(const std::string& path, const std::string& what, std::string* text,
                  std::string* error);

}  // namespace rd::orch
