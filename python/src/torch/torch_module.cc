// SPDX-License-Identifier: BSD-3-Clause
// libreduce._torch: the c10d backend class and its options, created by libreduce/torch.py's
// creator function.
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/extension.h>
#include <torch/version.h>

#include "common/torch_backend_ops.h"
#include "process_group.h"

namespace py = pybind11;

PYBIND11_MODULE(_torch, m) {
  using rd::torch_backend::ProcessGroupLibreduce;
  using Options = ProcessGroupLibreduce::Options;
  m.doc() = "libreduce c10d backend (use `import libreduce.torch`)";
  // The base classes are registered by torch.distributed; it must be imported first.
  py::module_::import("torch.distributed");
  auto backend =
      py::class_<ProcessGroupLibreduce, c10d::Backend, c10::intrusive_ptr<ProcessGroupLibreduce>>(
          m, "ProcessGroupLibreduce");
  py::class_<Options, c10d::Backend::Options, c10::intrusive_ptr<Options>>(backend, "Options",
                                                                           R"(
Options of a libreduce group: pass as ``init_process_group(..., pg_options=...)`` or
``new_group(..., pg_options=...)``. ``wire_dtype``: "none", "bf16" or "fp16" (float32 collectives
travel rounded to it and are summed in float32); "" = LIBREDUCE_WIRE_DTYPE.)")
      .def(py::init([](std::chrono::milliseconds timeout, const std::string& wire_dtype) {
             auto options = c10::make_intrusive<Options>(timeout);
             options->wire_dtype = wire_dtype;
             return options;
           }),
           py::arg("timeout") = kBackendDefaultTimeout, py::arg("wire_dtype") = "")
      .def_readwrite("wire_dtype", &Options::wire_dtype);
  backend
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       const c10::intrusive_ptr<Options>& options) {
             py::gil_scoped_release unlocked;  // joining waits for every rank
             return c10::make_intrusive<ProcessGroupLibreduce>(store, rank, size, options);
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("options"))
      // torch asks a group that splits for this on the ranks outside the new group; a libreduce
      // group is created by its members alone, so they have nothing to do.
      .def("perform_nocolor_split", [](ProcessGroupLibreduce&, const py::object&) {});
  m.attr("TORCH_VERSION") = TORCH_VERSION;
  py::dict supported;
  for (const rd::TorchBackendOp& op : rd::kTorchBackendOps) supported[op.name] = op.how;
  m.attr("SUPPORTED_OPS") = supported;
}
