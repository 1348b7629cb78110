// SPDX-License-Identifier: BSD-3-Clause
// Events for whoever runs the job: one JSON object per line, appended to LIBREDUCE_EVENTS_FILE
// (reducectl reads them into the job record). Rare by design (a reducer failover), so each is
// one open, write and close: nothing is buffered that a crash could lose.
#pragma once

#include <string>

namespace rd::events {

/**
 * Appends {"event": @p name, "time": <seconds since the epoch>, <@p fields>} as one line when
 * LIBREDUCE_EVENTS_FILE is set. @p fields: JSON members without braces ("\"rank\": 0, ...") or
 * empty. Failures to write are logged once and otherwise ignored.
 */
void record(const std::string& name, const std::string& fields);

}  // namespace rd::events
