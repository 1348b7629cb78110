// SPDX-License-Identifier: BSD-3-Clause
// The progress engine: the one thread per process that drives every transport, and so every
// communicator and reducer in it (as gloo's Device serves all of its contexts). Other threads
// only post work to it and wait. It sleeps in epoll on the event fds of its sources and on a
// wakeup fd when nothing happens, so an idle process uses no CPU.
//
//   - post / postAfter / runSync: run a function on the progress thread (now, later, and wait);
//   - sources (EventSource): progressed every turn, armed before the thread sleeps, ticked about
//     every 100 ms (the owners' timeouts);
//   - deferral: what a source's callback asks for inside its progress call (a send, a close)
//     can be deferred to right after it: UCX (1.13, TCP) asserts when an endpoint of the batch it
//     is handling is closed under it;
//   - retirement: a source its owner has let go (a UCX worker whose endpoints are still closing)
//     is driven until it is done or a deadline passes, then destroyed, without making the owner
//     wait.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>

#include "libreduce/reduce.h"

namespace rd::transport {

using Clock = std::chrono::steady_clock;

/** How often sources are ticked (EventSource::onTick): the granularity of every timeout. */
constexpr std::chrono::milliseconds kTickInterval{100};

/** Something the engine drives. Every method runs on the progress thread. */
class EventSource {
 public:
  virtual ~EventSource() = default;
  /** An fd that becomes readable when the source has work; -1 when it has none. */
  virtual int eventFd() const { return -1; }
  /** Makes what progress it can; true when anything happened. */
  virtual bool progress() = 0;
  /** Called before the engine sleeps: false when work arrived meanwhile (do not sleep). */
  virtual bool armForSleep() { return true; }
  /** About every 100 ms. */
  virtual void onTick(Clock::time_point /*now*/) {}
  /** For a retired source: true once nothing is left to finish and it may be destroyed. */
  virtual bool finished() const { return true; }
  /**
   * True when eventFd() stays readable for as long as the source has work (level-triggered):
   * the engine then calls progress() only when the fd is ready (or after being busy a while),
   * which saves a call per turn. UCX workers are not: they must be progressed until idle.
   */
  virtual bool levelTriggered() const { return false; }
};

class ProgressLoop;

class ProgressEngine {
 public:
  /**
   * The process's engine, started on first use and stopped when its last owner lets it go.
   * Communicators, reducers and the NCCL plugin of one process all share it.
   */
  static std::shared_ptr<ProgressEngine> shared();

  /** A private engine (tests); @p spin_us as LIBREDUCE_SPIN_US. */
  static std::shared_ptr<ProgressEngine> create(uint32_t spin_us);

  /** Stops the thread after finishing (bounded) what was retired into it. */
  ~ProgressEngine();
  ProgressEngine(const ProgressEngine&) = delete;
  ProgressEngine& operator=(const ProgressEngine&) = delete;

  /** Runs @p fn on the progress thread, after what was posted before it. Thread-safe. */
  void post(std::function<void()> fn);

  /** Runs @p fn on the progress thread once @p delay has passed. Thread-safe. */
  void postAfter(std::chrono::microseconds delay, std::function<void()> fn);

  /** Runs @p fn on the progress thread and returns its status (and last error). Thread-safe. */
  rdResult_t runSync(const std::function<rdResult_t()>& fn);

  /** True on the progress thread. */
  bool onProgressThread() const;

  // --- progress thread only -------------------------------------------------------------
  /** Starts driving @p source (not owned). */
  void addSource(EventSource* source);
  /** Stops driving @p source: none of its methods is called after this returns. */
  void removeSource(EventSource* source);
  /**
   * Takes @p source over: it is driven until finished() or @p deadline, then destroyed (on the
   * progress thread, or when the engine stops).
   */
  void retire(std::unique_ptr<EventSource> source, Clock::time_point deadline);
  /** True inside a source's progress(): sends and closes asked for now must be deferred. */
  bool inSourceProgress() const;
  /** Runs @p fn right after the current progress() call (at once outside one). */
  void defer(std::function<void()> fn);

 private:
  explicit ProgressEngine(uint32_t spin_us);
  std::shared_ptr<ProgressLoop> loop_;  // shared with the thread, which may outlive this
  std::thread thread_;
};

/**
 * Lets what was retired finish (the endpoint closes of communicators destroyed just before,
 * each bounded by its own deadline), then stops every progress thread of this process where it
 * is, leaving what they drive as it is, and waits (bounded) until they have. Runs at exit()
 * (registered with the first engine): no progress thread may still run while static objects and
 * UCX's state are torn down, and a job may exit with its communicators alive (the NCCL plugin's
 * transport lives until exit). From then on runSync fails at once and what is posted is dropped.
 * Public for tests.
 */
void haltProgressAtExit();

}  // namespace rd::transport
