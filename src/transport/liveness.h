// SPDX-License-Identifier: BSD-3-Clause
// Whose silence a heartbeat verdict counts. A peer that sent nothing for a whole heartbeat
// period is declared frozen; but when the observer itself was away (its progress thread held by
// a long call, its process starved of CPU), what the peer sent meanwhile is still unread in the
// socket, and that gap is the observer's, not the peer's. The observer notes when it last
// looked, and moves each peer's last-heard time forward by any stall of its own. A peer that is
// really stopped stays silent once the observer is back, and is named one period later.
#pragma once

#include <algorithm>

#include "transport/progress_engine.h"

namespace rd::transport {

/** The gap between two looks that still counts as the observer's normal pace (ticks late). */
constexpr Clock::duration kObserverPace = 3 * kTickInterval;

/** One observer's looks at its peers' silence, once per tick, on its progress thread. */
class SilenceWatch {
 public:
  /** Made with its owner: a hold-up before the first look counts too. */
  SilenceWatch() : looked_(Clock::now()) {}

  /**
   * Marks a look at @p now. Returns how long the observer was away beyond its pace since the
   * previous look (zero when it kept pace): the time to credit every peer.
   */
  Clock::duration look(Clock::time_point now) {
    Clock::duration away{0};
    if (now - looked_ > kObserverPace) {
      away = now - looked_ - kTickInterval;
    }
    looked_ = now;
    stalled_ += away;
    return away;
  }

  /** Moves @p heard forward by @p away, never past @p now. */
  static void credit(Clock::time_point* heard, Clock::duration away, Clock::time_point now) {
    if (away > Clock::duration{0}) *heard = std::min(now, *heard + away);
  }

  /** All the time credited so far: how long this observer itself was held up. */
  Clock::duration stalled() const { return stalled_; }

 private:
  Clock::time_point looked_;
  Clock::duration stalled_{0};
};

}  // namespace rd::transport
