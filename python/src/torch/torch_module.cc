// libreduce._torch: the c10d backend class, created by libreduce/torch.py's creator function.
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/extension.h>

#include "common/torch_backend_ops.h"
#include "process_group.h"

namespace py = pybind11;

PYBIND11_MODULE(_torch, m) {
  using rd::torch_backend::BackendBase;
  using rd::torch_backend::ProcessGroupLibreduce;
  m.doc() = "libreduce c10d backend (use `import libreduce.torch`)";
  // The base class is registered by torch.distributed; it must be imported first.
  py::module_::import("torch.distributed");
  py::class_<ProcessGroupLibreduce, BackendBase, c10::intrusive_ptr<ProcessGroupLibreduce>>(
      m, "ProcessGroupLibreduce")
      .def(py::init([](const py::bytes& unique_id, int rank, int size,
                       std::chrono::milliseconds timeout, const std::string& wire_dtype) {
             std::string id = unique_id;
             py::gil_scoped_release unlocked;  // joining waits for every rank
             return c10::make_intrusive<ProcessGroupLibreduce>(id, rank, size, timeout, wire_dtype);
           }),
           py::arg("unique_id"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
           py::arg("wire_dtype") = "");
  m.attr("TORCH_VERSION_MAJOR") = TORCH_VERSION_MAJOR;
  py::dict supported;
  for (const rd::TorchBackendOp& op : rd::kTorchBackendOps) supported[op.name] = op.how;
  m.attr("SUPPORTED_OPS") = supported;
}
