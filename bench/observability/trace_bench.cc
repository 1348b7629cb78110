// SPDX-License-Identifier: BSD-3-Clause
// What the timeline (LIBREDUCE_TRACE) costs: recording one span (a worker records 4 per
// operation, a reducer 4 per chunk), from one thread and from two at once, and writing the
// file of a full ring (at exit, on SIGUSR1, on a failure).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <string>

#include "common/trace.h"

namespace {

rd::trace::Span sampleSpan() {
  rd::trace::Span s;
  s.name = "transfer";
  s.category = "phase";
  s.begin = rd::trace::Clock::now();
  s.end = s.begin + std::chrono::microseconds(100);
  s.comm = 0x0123456789abcdefull;
  s.op = 42;
  s.bytes = 4096;
  return s;
}

rd::trace::Tracer& tracer() {
  static rd::trace::Tracer* t = new rd::trace::Tracer("/tmp", 100000);
  return *t;
}

void BM_RecordSpan(benchmark::State& state) {
  rd::trace::Tracer& t = tracer();
  rd::trace::Span s = sampleSpan();
  for (auto _ : state) {
    ++s.op;
    t.record(s);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RecordSpan);
BENCHMARK(BM_RecordSpan)->Threads(2);

void BM_RenderFullRing(benchmark::State& state) {
  rd::trace::Tracer t("/tmp", 100000);
  rd::trace::Span s = sampleSpan();
  for (int i = 0; i < 100000; ++i) {
    ++s.op;
    t.record(s);
  }
  size_t bytes = 0;
  for (auto _ : state) {
    std::string text = t.render();
    bytes = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["file_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_RenderFullRing)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
