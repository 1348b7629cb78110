// SPDX-License-Identifier: BSD-3-Clause
#include "common/trace.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "common/json_text.h"
#include "common/log.h"
#include "common/metrics_text.h"
#include "common/settings.h"
#include "common/status.h"

namespace rd::trace {

namespace {

int g_flush_pipe[2] = {-1, -1};

void onSigusr1(int) {
  const char one = 1;
  ssize_t n = ::write(g_flush_pipe[1], &one, 1);  // async-signal-safe; the thread writes
  (void)n;
}

// SIGUSR1 writes the file, unless the program handles the signal itself: a thread waits for it
// in a blocking read, since a signal handler can neither lock nor allocate.
void flushOnSigusr1(Tracer* tracer) {
  struct sigaction current {};
  if (sigaction(SIGUSR1, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) return;
  if (pipe2(g_flush_pipe, O_CLOEXEC) != 0) return;
  std::thread([tracer] {
    char byte = 0;
    while (true) {
      ssize_t n = ::read(g_flush_pipe[0], &byte, 1);
      if (n == 1) {
        tracer->flush();
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        return;
      }
    }
  }).detach();
  struct sigaction action {};
  action.sa_handler = onSigusr1;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &action, nullptr);
}

}  // namespace

Tracer* Tracer::get() {
  static Tracer* const instance = []() -> Tracer* {
    const std::string dir = settings::rawValue(settings::Id::kTrace);
    if (dir.empty()) return nullptr;
    int64_t capacity = 0;
    if (settings::readInt(settings::Id::kTraceSpans, &capacity) != rdSuccess) {
      RD_LOG_ERROR("LIBREDUCE_TRACE_SPANS: %s; no timeline is written", lastError().c_str());
      return nullptr;
    }
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      RD_LOG_ERROR("LIBREDUCE_TRACE=%s: cannot make the directory: %s; no timeline is written",
                   dir.c_str(), std::strerror(errno));
      return nullptr;
    }
    auto* tracer = new Tracer(dir, static_cast<size_t>(capacity));  // lives until exit
    std::atexit([] {
      if (Tracer* self = get()) self->flush();
    });
    flushOnSigusr1(tracer);
    return tracer;
  }();
  return instance;
}

Tracer::Tracer(const std::string& dir, size_t capacity) : ring_(std::max<size_t>(capacity, 1)) {
  path_ = dir + "/libreduce-" + metrics::hostName() + "-" + std::to_string(getpid()) + ".json";
  process_name_ = "pid " + std::to_string(getpid());
  const auto wall = std::chrono::system_clock::now().time_since_epoch();
  const auto steady = Clock::now().time_since_epoch();
  wall_minus_steady_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(wall).count() -
                          std::chrono::duration_cast<std::chrono::nanoseconds>(steady).count();
}

void Tracer::setProcessName(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  process_name_ = name;
}

void Tracer::setTrackLabel(const std::string& label) {
  std::lock_guard<std::mutex> lock(mu_);
  track_label_ = label;
}

void Tracer::record(const Span& span) {
  std::lock_guard<std::mutex> lock(mu_);
  ring_[next_] = span;
  next_ = (next_ + 1) % ring_.size();
  ++recorded_;
}

double Tracer::wallMicros(Clock::time_point t) const {
  const int64_t ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count() +
      wall_minus_steady_ns_;
  return static_cast<double>(ns) / 1e3;
}

std::string Tracer::render() {
  std::vector<Span> spans;
  std::string process, label;
  uint64_t dropped = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const size_t kept = std::min<uint64_t>(recorded_, ring_.size());
    dropped = recorded_ - kept;
    spans.assign(ring_.begin(), ring_.begin() + static_cast<std::ptrdiff_t>(kept));
    process = process_name_;
    label = track_label_;
  }
  std::stable_sort(spans.begin(), spans.end(),
                   [](const Span& a, const Span& b) { return a.begin < b.begin; });
  const std::string pid = std::to_string(getpid());
  std::string out = "[\n";
  out += R"({"name": "process_name", "ph": "M", "pid": )" + pid +
         R"(, "tid": 0, "args": {"name": )" + jsonString(process) + R"(, "spans_dropped": )" +
         std::to_string(dropped) + "}}";
  std::vector<uint32_t> tracks;
  tracks.reserve(spans.size());
  for (const Span& s : spans) tracks.push_back(s.track);
  std::sort(tracks.begin(), tracks.end());
  tracks.erase(std::unique(tracks.begin(), tracks.end()), tracks.end());
  for (uint32_t track : tracks) {
    out += ",\n" + std::string(R"({"name": "thread_name", "ph": "M", "pid": )") + pid +
           R"(, "tid": )" + std::to_string(track) + R"(, "args": {"name": )" +
           jsonString(label + " " + std::to_string(track)) + "}}";
  }
  char line[512];
  for (const Span& s : spans) {
    const double begin = wallMicros(s.begin);
    const double dur = std::max(0.0, wallMicros(s.end) - begin);
    int n = std::snprintf(
        line, sizeof line,
        ",\n{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, "
        "\"dur\": %.3f, \"pid\": %s, \"tid\": %u, \"args\": {\"comm\": \"%s\", "
        "\"op\": %llu, \"bytes\": %llu",
        s.name, s.category, begin, dur, pid.c_str(), s.track, metrics::commIdText(s.comm).c_str(),
        static_cast<unsigned long long>(s.op), static_cast<unsigned long long>(s.bytes));
    out.append(line, static_cast<size_t>(std::max(0, std::min<int>(n, sizeof line - 1))));
    if (s.chunk >= 0) out += ", \"chunk\": " + std::to_string(s.chunk);
    if (s.algorithm != nullptr) out += ", \"algorithm\": \"" + std::string(s.algorithm) + "\"";
    out += "}}";
  }
  out += "\n]\n";
  return out;
}

bool Tracer::flush() {
  const std::string text = render();
  std::lock_guard<std::mutex> lock(file_mu_);
  const std::string tmp = path_ + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  bool ok = f != nullptr && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (f != nullptr && std::fclose(f) != 0) ok = false;
  if (ok && std::rename(tmp.c_str(), path_.c_str()) != 0) ok = false;
  if (!ok) {
    RD_LOG_WARN("LIBREDUCE_TRACE: cannot write %s: %s", path_.c_str(), std::strerror(errno));
    std::remove(tmp.c_str());
  }
  return ok;
}

void flushIfOn() {
  if (Tracer* tracer = Tracer::get()) tracer->flush();
}

}  // namespace rd::trace
