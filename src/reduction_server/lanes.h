// SPDX-License-Identifier: BSD-3-Clause
// A reducer process that uses several cores for network progress: `lanes` independent
// reduction servers, each with its own progress thread, UCX worker and listening port, sharing
// one executor for the reductions. Each lane is a reducer address of its own (workers list them
// all, as the ready line does): chunks spread over every lane of every reducer, and no state is
// shared between lanes but the executor, so nothing on the data path takes a lock. The memory
// limit is split evenly between the lanes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/executor.h"
#include "reduction_server/server.h"
#include "transport/progress_engine.h"

namespace rd::server {

class ReducerLanes {
 public:
  /**
   * Starts @p lanes servers like @p options (port P: lanes on P, P+1, ...; port 0: any free
   * ports), each on an engine of its own, with @p reduce_threads executor threads between them.
   */
  static rdResult_t start(const ServerOptions& options, int lanes, int reduce_threads,
                          std::unique_ptr<ReducerLanes>* out);
  /** Stops every lane, then the executor. */
  ~ReducerLanes();
  ReducerLanes(const ReducerLanes&) = delete;
  ReducerLanes& operator=(const ReducerLanes&) = delete;

  /** Every lane's "host:port", comma-separated: what workers list as reducers. */
  std::string addresses() const;
  size_t size() const { return servers_.size(); }
  ReductionServer& lane(size_t i) { return *servers_.at(i); }

 private:
  ReducerLanes() = default;
  std::shared_ptr<Executor> executor_;
  std::vector<std::shared_ptr<transport::ProgressEngine>> engines_;
  std::vector<std::unique_ptr<ReductionServer>> servers_;
};

}  // namespace rd::server
