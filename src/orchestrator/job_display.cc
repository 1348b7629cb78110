// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/job_display.h"

#include <unistd.h>

#include <chrono>

namespace rd::orch {

namespace {

constexpr size_t kMaxBacklogBytes = 8u << 20;
constexpr std::chrono::seconds kFinishWait{2};

void writeOut(FILE* out, const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), out);
  std::fflush(out);
}

}  // namespace

JobDisplay::JobDisplay(bool quiet) : quiet_(quiet), tty_(isatty(STDERR_FILENO) == 1) {}

JobDisplay::~JobDisplay() {
  if (!writer_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  // A writer still blocked on a terminal nobody reads must not hold reducectl's exit.
  writer_.detach();
}

void JobDisplay::start() {
  if (!writer_.joinable()) writer_ = std::thread([this] { writerLoop(); });
}

void JobDisplay::writerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;
    auto [out, text] = std::move(queue_.front());
    queue_.pop_front();
    queued_bytes_ -= text.size();
    if (dropped_lines_ > 0 && queue_.empty()) {
      text += "reducectl: " + std::to_string(dropped_lines_) +
              " replica output line(s) not shown (the terminal fell behind); the logs have them\n";
      dropped_lines_ = 0;
    }
    writing_ = true;
    lock.unlock();
    writeOut(out, text);
    lock.lock();
    writing_ = false;
    cv_.notify_all();
  }
}

void JobDisplay::emit(FILE* out, std::string text, bool droppable) {
  if (text.empty()) return;
  if (!writer_.joinable()) {
    writeOut(out, text);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (droppable && queued_bytes_ + text.size() > kMaxBacklogBytes) {
      ++dropped_lines_;
      return;
    }
    queued_bytes_ += text.size();
    queue_.emplace_back(out, std::move(text));
  }
  cv_.notify_all();
}

std::string JobDisplay::eraseStatus() {
  if (!drawn_) return {};
  drawn_ = false;
  return "\r\033[K";
}

std::string JobDisplay::drawStatus() {
  if (!tty_ || status_.empty()) return {};
  drawn_ = true;
  return "\033[1m" + status_ + "\033[0m";
}

void JobDisplay::replicaLine(const std::string& replica, bool is_stderr, const std::string& line) {
  if (quiet_) return;
  std::string text = "[" + replica + "] " + line + "\n";
  if (tty_ && drawn_) {
    // On a terminal both streams are the one screen: the line goes between erase and redraw.
    emit(stderr, eraseStatus(), false);
    emit(is_stderr ? stderr : stdout, std::move(text), true);
    emit(stderr, drawStatus(), false);
    return;
  }
  emit(is_stderr ? stderr : stdout, std::move(text), true);
}

void JobDisplay::note(const std::string& text) {
  emit(stderr, eraseStatus() + "reducectl: " + text + "\n" + drawStatus(), false);
}

void JobDisplay::setStatus(const std::string& text) {
  if (!tty_ || text == status_) return;
  std::string erase = eraseStatus();
  status_ = text;
  emit(stderr, erase + drawStatus(), false);
}

void JobDisplay::finish() {
  emit(stderr, eraseStatus(), false);
  status_.clear();
  if (!writer_.joinable()) return;
  // Bounded: a terminal nobody reads must not keep reducectl from ending (what is left is in the
  // logs).
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, kFinishWait, [this] { return queue_.empty() && !writing_; });
}

}  // namespace rd::orch
