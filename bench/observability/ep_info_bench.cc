// SPDX-License-Identifier: BSD-3-Clause
// What naming a link's transports costs (ucx_ep_info.h): a reducer's metrics scrape reads one
// per worker connection (libreduce_reducer_connections_by_transport), on its progress thread.
// An endpoint from a UCP worker to itself, progressed until its lanes are set up.
#include <benchmark/benchmark.h>
#include <ucp/api/ucp.h>

#include <cstdio>
#include <string>

#include "transport/ucx/ucx_ep_info.h"

namespace {

struct SelfEndpoint {
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  ucp_ep_h ep = nullptr;

  SelfEndpoint() {
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_AM;
    ucp_worker_params_t worker_params{};
    ucp_address_t* address = nullptr;
    size_t address_len = 0;
    if (ucp_init(&params, nullptr, &context) != UCS_OK ||
        ucp_worker_create(context, &worker_params, &worker) != UCS_OK ||
        ucp_worker_get_address(worker, &address, &address_len) != UCS_OK) {
      std::fputs("cannot start UCX\n", stderr);
      return;
    }
    ucp_ep_params_t ep_params{};
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep_params.address = address;
    if (ucp_ep_create(worker, &ep_params, &ep) != UCS_OK) ep = nullptr;
    ucp_worker_release_address(worker, address);
    for (int i = 0; i < 100; ++i) ucp_worker_progress(worker);
  }
};

void BM_EndpointTransports(benchmark::State& state) {
  static SelfEndpoint self;
  if (self.ep == nullptr) {
    state.SkipWithError("no UCX endpoint");
    return;
  }
  std::string transports;
  for (auto _ : state) {
    transports = rd::transport::endpointTransports(self.ep);
    benchmark::DoNotOptimize(transports);
  }
  state.SetLabel(transports);
}
BENCHMARK(BM_EndpointTransports);

}  // namespace

BENCHMARK_MAIN();
