// SPDX-License-Identifier: BSD-3-Clause
#include "orchestrator/replica_output.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace rd::orch {

namespace {

constexpr size_t kCauseLines = 3;            // last stderr lines kept per replica for the summary
constexpr size_t kMaxLineBytes = 1 << 16;    // longer output without a newline is cut into lines
constexpr size_t kFinalReadBytes = 4 << 20;  // read after a replica exited, at most

void emitLine(Replica& r, bool is_stderr, JobDisplay& display, const std::string& line) {
  if (is_stderr && !line.empty()) {
    r.last_err.push_back(line);
    if (r.last_err.size() > kCauseLines) r.last_err.pop_front();
  }
  display.replicaLine(r.name, is_stderr, line);
}

}  // namespace

void drainReplicaOutput(Replica& r, bool is_stderr, bool final, JobDisplay& display) {
  int& fd = is_stderr ? r.proc.stderr_fd : r.proc.stdout_fd;
  std::string& pending = is_stderr ? r.err_buf : r.out_buf;
  char buf[65536];
  // The final read is bounded too: a process the replica left behind may write for ever.
  size_t budget = final ? kFinalReadBytes : sizeof buf;
  while (fd >= 0 && budget > 0) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 || (n < 0 && errno != EAGAIN)) {
      close(fd);
      fd = -1;
      break;
    }
    if (n < 0) break;  // nothing more now
    budget -= std::min(budget, static_cast<size_t>(n));
    if (r.log_fd >= 0 && write(r.log_fd, buf, static_cast<size_t>(n)) < 0) {
      // best effort: the terminal still shows the output
    }
    pending.append(buf, static_cast<size_t>(n));
    size_t start = 0, nl = 0;
    while ((nl = pending.find('\n', start)) != std::string::npos) {
      emitLine(r, is_stderr, display, pending.substr(start, nl - start));
      start = nl + 1;
    }
    pending.erase(0, start);  // once per read: linear in the output, however many lines
    if (pending.size() > kMaxLineBytes) {
      emitLine(r, is_stderr, display, pending);
      pending.clear();
    }
  }
  if (final && !pending.empty()) {
    emitLine(r, is_stderr, display, pending);
    pending.clear();
  }
  if (final && fd >= 0) {  // what is left unread is lost with the pipe
    close(fd);
    fd = -1;
  }
}

}  // namespace rd::orch
