// SPDX-License-Identifier: BSD-3-Clause
#include "transport/progress_engine.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <future>
#include <mutex>
#include <queue>
#include <unordered_set>
#include <vector>

#include "common/log.h"
#include "common/settings.h"
#include "common/status.h"

namespace rd::transport {

namespace {
// While busy the engine does not sleep, so it never learns which fds are ready: level-triggered
// sources are then progressed this often anyway.
constexpr auto kBusyPoll = std::chrono::milliseconds(1);
}  // namespace

// Everything the progress thread touches; the thread holds it alive until it returns, so an
// engine released from its own thread (a callback dropping the last owner) cannot pull the
// state from under it.
class ProgressLoop {
 public:
  explicit ProgressLoop(uint32_t spin_us);
  ~ProgressLoop();
  void run();
  void post(std::function<void()> fn);
  void stop() {
    post([this] { stop_ = true; });
  }
  // Process exit: the thread stops where it is and leaves every source, retiree and timer as
  // it is; what is posted from then on is dropped unrun. Any thread.
  void halt();
  // Until the thread stopped after halt(), at most @p limit; false when it did not.
  bool waitHalted(std::chrono::milliseconds limit);
  // Until nothing retired is left (each retiree ends by its own deadline), at most @p limit;
  // false when something is. Any thread but the loop's.
  bool waitRetired(std::chrono::milliseconds limit);
  bool onThread() const { return std::this_thread::get_id() == thread_id_.load(); }
  void setThread(std::thread::id id) { thread_id_ = id; }

  void addSource(EventSource* source);
  void removeSource(EventSource* source);
  void retire(std::unique_ptr<EventSource> source, Clock::time_point deadline);
  void addTimer(Clock::time_point at, std::function<void()> fn);
  bool inSourceProgress() const { return in_progress_; }
  void defer(std::function<void()> fn);

 private:
  struct Timer {
    Clock::time_point at;
    uint64_t order;  // equal times run in posting order
    std::function<void()> fn;
    bool operator>(const Timer& o) const { return at != o.at ? at > o.at : order > o.order; }
  };
  struct Retiree {
    std::unique_ptr<EventSource> source;
    Clock::time_point deadline;
  };

  bool runPosted();
  bool runTimers(Clock::time_point now);
  bool progressSources();
  bool progressOne(EventSource* source);
  void tick(Clock::time_point now);
  void reapRetirees(Clock::time_point now, bool all);
  bool armAll();
  void sleep(Clock::time_point now, Clock::time_point next_tick);
  void finishRetirees();

  const std::chrono::microseconds spin_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::atomic<std::thread::id> thread_id_{};
  bool stop_ = false;
  std::atomic<bool> halting_{false};
  bool halted_ = false;  // under posted_mu_: the thread has stopped for good
  std::condition_variable halted_cv_;
  std::atomic<bool> retiring_{false};  // retirees_ is not empty; cleared under posted_mu_
  std::condition_variable retired_cv_;

  std::mutex posted_mu_;
  std::vector<std::function<void()>> posted_;

  // Progress thread only.
  std::vector<EventSource*> sources_;  // null entries: removed during a pass, compacted after
  // Level-triggered sources' fds reported ready by the last sleep; such a source is progressed
  // only then, or after kBusyPoll of turns without a sleep.
  std::unordered_set<int> ready_fds_;
  Clock::time_point last_poll_ = Clock::now();
  std::vector<Retiree> retirees_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
  uint64_t timer_order_ = 0;
  std::vector<std::function<void()>> deferred_;
  bool in_progress_ = false;
};

ProgressLoop::ProgressLoop(uint32_t spin_us) : spin_(spin_us) {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) {
    // Without them the thread cannot sleep; it still works, polling every tick.
    RD_LOG_ERROR("progress engine: epoll/eventfd failed: %s", std::strerror(errno));
    return;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
}

ProgressLoop::~ProgressLoop() {
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void ProgressLoop::post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(posted_mu_);
    if (halted_) return;  // fn is destroyed unrun: a runSync waiting on it gets an error
    posted_.push_back(std::move(fn));
  }
  uint64_t one = 1;
  ssize_t n = ::write(wake_fd_, &one, sizeof one);
  (void)n;  // a full counter still wakes the loop
}

void ProgressLoop::addSource(EventSource* source) {
  sources_.push_back(source);
  int fd = source->eventFd();
  if (fd < 0 || epoll_fd_ < 0) return;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
}

void ProgressLoop::removeSource(EventSource* source) {
  auto it = std::find(sources_.begin(), sources_.end(), source);
  if (it == sources_.end()) return;
  *it = nullptr;  // compacted after the current pass
  int fd = source->eventFd();
  if (fd >= 0 && epoll_fd_ >= 0) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
}

void ProgressLoop::retire(std::unique_ptr<EventSource> source, Clock::time_point deadline) {
  if (!source) return;
  if (std::find(sources_.begin(), sources_.end(), source.get()) == sources_.end()) {
    addSource(source.get());
  }
  retirees_.push_back(Retiree{std::move(source), deadline});
  retiring_ = true;
}

void ProgressLoop::addTimer(Clock::time_point at, std::function<void()> fn) {
  timers_.push(Timer{at, timer_order_++, std::move(fn)});
}

void ProgressLoop::defer(std::function<void()> fn) {
  if (!in_progress_) {
    fn();
    return;
  }
  deferred_.push_back(std::move(fn));
}

bool ProgressLoop::runPosted() {
  std::vector<std::function<void()>> batch;
  {
    std::lock_guard<std::mutex> lock(posted_mu_);
    batch.swap(posted_);
  }
  for (auto& fn : batch) fn();
  return !batch.empty();
}

bool ProgressLoop::runTimers(Clock::time_point now) {
  bool ran = false;
  while (!timers_.empty() && timers_.top().at <= now) {
    auto fn = std::move(const_cast<Timer&>(timers_.top()).fn);
    timers_.pop();
    fn();
    ran = true;
  }
  return ran;
}

bool ProgressLoop::progressOne(EventSource* source) {
  in_progress_ = true;
  bool progressed = source->progress();
  in_progress_ = false;
  while (!deferred_.empty()) {
    auto batch = std::move(deferred_);
    deferred_.clear();
    for (auto& fn : batch) fn();
    progressed = true;
  }
  return progressed;
}

bool ProgressLoop::progressSources() {
  bool any = false;
  const auto now = Clock::now();
  const bool poll_all = now - last_poll_ >= kBusyPoll;
  if (poll_all) last_poll_ = now;
  // Indexes, not iterators: a callback may add a source (it is progressed next turn).
  for (size_t i = 0, n = sources_.size(); i < n; ++i) {
    EventSource* s = sources_[i];
    if (s == nullptr) continue;
    if (s->levelTriggered() && !poll_all && ready_fds_.count(s->eventFd()) == 0) continue;
    if (progressOne(s)) {
      any = true;
      if (s->levelTriggered()) ready_fds_.insert(s->eventFd());  // may have more: next turn too
    } else if (s->levelTriggered()) {
      ready_fds_.erase(s->eventFd());
    }
  }
  sources_.erase(std::remove(sources_.begin(), sources_.end(), nullptr), sources_.end());
  return any;
}

void ProgressLoop::tick(Clock::time_point now) {
  for (size_t i = 0, n = sources_.size(); i < n; ++i) {
    if (sources_[i] != nullptr) sources_[i]->onTick(now);
  }
  sources_.erase(std::remove(sources_.begin(), sources_.end(), nullptr), sources_.end());
}

void ProgressLoop::reapRetirees(Clock::time_point now, bool all) {
  for (size_t i = 0; i < retirees_.size();) {
    Retiree& r = retirees_[i];
    if (all || r.source->finished() || now >= r.deadline) {
      removeSource(r.source.get());
      std::unique_ptr<EventSource> done = std::move(r.source);
      retirees_[i] = std::move(retirees_.back());
      retirees_.pop_back();
      done.reset();  // its destructor releases what is left, maybe calling into the engine
    } else {
      ++i;
    }
  }
  sources_.erase(std::remove(sources_.begin(), sources_.end(), nullptr), sources_.end());
  if (retirees_.empty() && retiring_) {
    std::lock_guard<std::mutex> lock(posted_mu_);
    retiring_ = false;
    retired_cv_.notify_all();
  }
}

bool ProgressLoop::armAll() {
  for (EventSource* s : sources_) {
    if (s != nullptr && !s->armForSleep()) return false;
  }
  return true;
}

void ProgressLoop::sleep(Clock::time_point now, Clock::time_point next_tick) {
  Clock::time_point wake = next_tick;
  if (!timers_.empty()) wake = std::min(wake, timers_.top().at);
  auto wait_us = std::chrono::duration_cast<std::chrono::microseconds>(wake - now).count();
  int wait_ms = wait_us <= 0 ? 0 : static_cast<int>((wait_us + 999) / 1000);
  epoll_event events[8];
  int n = epoll_fd_ >= 0 ? epoll_wait(epoll_fd_, events, 8, wait_ms) : 0;
  if (epoll_fd_ < 0) std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
  for (int i = 0; i < n; ++i) {
    if (events[i].data.fd == wake_fd_) {
      uint64_t value = 0;
      ssize_t r = ::read(wake_fd_, &value, sizeof value);
      (void)r;
    } else {
      ready_fds_.insert(events[i].data.fd);
    }
  }
  last_poll_ = Clock::now();
}

void ProgressLoop::run() {
  auto next_tick = Clock::now() + kTickInterval;
  auto last_activity = Clock::now();
  while (!stop_ && !halting_.load(std::memory_order_relaxed)) {
    bool busy = runPosted();
    auto now = Clock::now();
    if (runTimers(now)) busy = true;
    if (progressSources()) busy = true;
    now = Clock::now();
    if (now >= next_tick) {
      next_tick = now + kTickInterval;
      tick(now);
    }
    if (!retirees_.empty()) reapRetirees(now, false);
    if (busy) last_activity = now;
    // Right after activity more usually follows (the next fragment, the peer's answer): poll
    // a few microseconds before paying for a sleep and a wake-up. Idle, the thread sleeps.
    if (busy || stop_ || now - last_activity < spin_) continue;
    if (!armAll()) continue;  // events arrived meanwhile
    sleep(now, next_tick);
  }
  if (!halting_) {
    finishRetirees();
    return;
  }
  std::vector<std::function<void()>> dropped;
  {
    std::lock_guard<std::mutex> lock(posted_mu_);
    halted_ = true;
    dropped.swap(posted_);
  }
  halted_cv_.notify_all();
}

void ProgressLoop::halt() {
  halting_ = true;
  uint64_t one = 1;
  ssize_t n = ::write(wake_fd_, &one, sizeof one);
  (void)n;
}

bool ProgressLoop::waitHalted(std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(posted_mu_);
  return halted_cv_.wait_for(lock, limit, [this] { return halted_; });
}

bool ProgressLoop::waitRetired(std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(posted_mu_);
  return retired_cv_.wait_for(lock, limit, [this] { return !retiring_ || halted_; });
}

void ProgressLoop::finishRetirees() {
  while (!retirees_.empty()) {
    auto now = Clock::now();
    runPosted();
    runTimers(now);
    progressSources();
    reapRetirees(now, false);
    if (retirees_.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!sources_.empty()) {
    RD_LOG_WARN("progress engine stopped with %zu sources still registered", sources_.size());
  }
}

// --- Process exit -----------------------------------------------------------------------

namespace {

// How long exit waits for each progress thread to stop (one in a long callback is left).
constexpr auto kExitHaltWait = std::chrono::milliseconds(2000);
// How long exit waits for what communicators destroyed just before it still send (their last
// messages, their close notices): each retiree also ends by its own deadline, sooner.
constexpr auto kExitRetireWait = std::chrono::milliseconds(2000);

// Every engine's loop in this process. At exit() no progress thread may still run: static
// objects and UCX's own state are torn down under it (an NCCL plugin's engine lives until exit,
// and a job may exit without destroying its communicators). Never destroyed, for the same reason.
struct LiveLoops {
  std::mutex mu;
  pid_t pid = 0;  // a forked child has none of these threads
  std::vector<std::weak_ptr<ProgressLoop>> loops;
  std::vector<std::shared_ptr<ProgressLoop>> kept;  // halted: never destroyed during exit
};

LiveLoops& liveLoops() {
  static auto* live = new LiveLoops;
  return *live;
}

void registerLoop(const std::shared_ptr<ProgressLoop>& loop) {
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(haltProgressAtExit); });
  LiveLoops& live = liveLoops();
  std::lock_guard<std::mutex> lock(live.mu);
  if (live.pid != getpid()) live.loops.clear();  // a forked child starts its own
  live.pid = getpid();
  live.loops.erase(std::remove_if(live.loops.begin(), live.loops.end(),
                                  [](const auto& weak) { return weak.expired(); }),
                   live.loops.end());
  live.loops.push_back(loop);
}

}  // namespace

void haltProgressAtExit() {
  LiveLoops& live = liveLoops();
  std::lock_guard<std::mutex> lock(live.mu);
  if (live.pid != getpid()) return;
  for (const auto& weak : live.loops) {
    if (auto loop = weak.lock()) live.kept.push_back(std::move(loop));
  }
  live.loops.clear();
  // Closes still under way finish first, so that peers hear a clean close rather than a lost
  // connection, and nothing of UCX's is left half torn down.
  for (const auto& loop : live.kept) {
    if (!loop->onThread()) loop->waitRetired(kExitRetireWait);
  }
  for (const auto& loop : live.kept) loop->halt();
  for (const auto& loop : live.kept) {
    if (!loop->onThread() && !loop->waitHalted(kExitHaltWait)) {
      RD_LOG_WARN("exit: a progress thread did not stop within %lld ms",
                  static_cast<long long>(kExitHaltWait.count()));
    }
  }
}

// --- ProgressEngine ---------------------------------------------------------------------

ProgressEngine::ProgressEngine(uint32_t spin_us) : loop_(std::make_shared<ProgressLoop>(spin_us)) {
  std::promise<void> started;
  auto ready = started.get_future();
  thread_ = std::thread([loop = loop_, &started] {
    loop->setThread(std::this_thread::get_id());
    started.set_value();
    loop->run();
  });
  ready.wait();  // onProgressThread() is right from the first call on
  registerLoop(loop_);
}

ProgressEngine::~ProgressEngine() {
  loop_->stop();
  if (std::this_thread::get_id() == thread_.get_id()) {
    thread_.detach();  // released from a callback: the loop ends after it, holding its state
  } else {
    thread_.join();
  }
}

std::shared_ptr<ProgressEngine> ProgressEngine::create(uint32_t spin_us) {
  return std::shared_ptr<ProgressEngine>(new ProgressEngine(spin_us));
}

std::shared_ptr<ProgressEngine> ProgressEngine::shared() {
  static std::mutex mu;
  static std::weak_ptr<ProgressEngine> current;
  std::lock_guard<std::mutex> lock(mu);
  if (auto engine = current.lock()) return engine;
  int64_t spin = 0;
  if (settings::readInt(settings::Id::kSpinUs, &spin) != rdSuccess) spin = 0;
  auto engine = create(static_cast<uint32_t>(spin));
  current = engine;
  return engine;
}

void ProgressEngine::post(std::function<void()> fn) {
  loop_->post(std::move(fn));
}

void ProgressEngine::postAfter(std::chrono::microseconds delay, std::function<void()> fn) {
  auto at = Clock::now() + delay;
  if (onProgressThread()) {
    loop_->addTimer(at, std::move(fn));
    return;
  }
  loop_->post([loop = loop_.get(), at, fn = std::move(fn)]() mutable {
    loop->addTimer(at, std::move(fn));
  });
}

rdResult_t ProgressEngine::runSync(const std::function<rdResult_t()>& fn) {
  if (onProgressThread()) return fn();
  struct Outcome {
    rdResult_t status;
    std::string error;
  };
  // The promise lives in the posted function: dropped unrun at exit, it breaks the wait.
  auto done = std::make_shared<std::promise<Outcome>>();
  auto future = done->get_future();
  post([&fn, done = std::move(done)] {
    rdResult_t status = fn();
    done->set_value({status, status < 0 ? lastError() : std::string()});
  });
  Outcome outcome;
  try {
    outcome = future.get();
  } catch (const std::future_error&) {
    return setError(rdInvalidUsage, "the progress thread has stopped: the process is exiting");
  }
  if (outcome.status < 0) return setError(outcome.status, outcome.error);
  return outcome.status;
}

bool ProgressEngine::onProgressThread() const {
  return loop_->onThread();
}

void ProgressEngine::addSource(EventSource* source) {
  loop_->addSource(source);
}

void ProgressEngine::removeSource(EventSource* source) {
  loop_->removeSource(source);
}

void ProgressEngine::retire(std::unique_ptr<EventSource> source, Clock::time_point deadline) {
  loop_->retire(std::move(source), deadline);
}

bool ProgressEngine::inSourceProgress() const {
  return loop_->inSourceProgress();
}

void ProgressEngine::defer(std::function<void()> fn) {
  loop_->defer(std::move(fn));
}

}  // namespace rd::transport
