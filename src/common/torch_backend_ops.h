// SPDX-License-Identifier: BSD-3-Clause
// What the c10d backend "libreduce" (python/src/torch) implements: reduce-info lists it, and
// the backend module exports it as libreduce._torch.SUPPORTED_OPS.
#pragma once

namespace rd {

struct TorchBackendOp {
  const char* name;  // torch.distributed's call
  const char* how;   // what the backend does
};

inline constexpr TorchBackendOp kTorchBackendOps[] = {
    {"all_reduce",
     "every dtype but int16 (bool, complex as pairs); SUM AVG PREMUL_SUM PRODUCT "
     "MIN MAX"},
    {"all_reduce_coalesced", "the list as one all-reduce"},
    {"reduce, reduce_scatter(_tensor)", "as all_reduce"},
    {"broadcast, all_gather(_into_tensor)", "any dtype (bytes)"},
    {"all_gather_coalesced", "the list as one all-gather, any dtypes"},
    {"all_gather_into_tensor_coalesced, reduce_scatter_tensor_coalesced",
     "one work for the list (the functional collectives', FSDP's)"},
    {"gather, scatter", "one message per rank, to or from the root"},
    {"all_to_all(_single)", "one message per pair, uneven splits"},
    {"send, recv, isend, irecv", "tags; recv from any rank; batch_isend_irecv"},
    {"barrier", "an empty all-reduce (a byte around the ring)"},
    {"monitored_barrier", "names the ranks that did not come (rank 0 waits for each)"},
    {"Work.get_future", "every call (DDP communication hooks, PowerSGD)"},
    {"new_group, split_group", "a new communicator of the members (pg_options: Options)"},
    {"abort, shutdown, get_error, set_timeout", "as torch's Backend defines them"},
};

}  // namespace rd
