// SPDX-License-Identifier: BSD-3-Clause
// libreduce._core: communicators and collectives for Python. Every buffer-protocol object
// works (numpy arrays, bytearray, memoryview); libreduce/__init__.py adds the numpy
// conveniences. Failures raise the typed exceptions of libreduce.errors.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "buffer_args.h"
#include "common/limits.h"
#include "libreduce/reduce.h"
#include "libreduce/reduce.hpp"

namespace py = pybind11;

namespace rd::python {
namespace {

// An operation in flight. Holds the buffers (and locks their exporters) until it has ended:
// dropping a running request waits for it rather than freeing memory the network still writes.
class Request {
 public:
  Request(rdRequest_t request, std::vector<BufferArg> buffers)
      : request_(request), buffers_(std::move(buffers)) {}
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  ~Request() {
    if (request_ == nullptr) return;
    try {
      py::gil_scoped_release unlocked;
      rdRequestWait(request_, -1);  // bounded by the communicator's timeout
    } catch (...) {                 // releasing the GIL failed: the interpreter is going away
      rdRequestWait(request_, -1);
    }
    rdRequestFree(request_);
  }

  bool test() { return finishIf(check(rdRequestTest(request_))); }

  /** The rank a finished receive took its message from (-1 for other operations). */
  int source() const {
    int rank = -1;
    check(rdRequestSource(request_, &rank));
    return rank;
  }

  bool wait(std::optional<double> timeout_s) {
    int timeout_ms = -1;
    if (timeout_s) {
      if (!(*timeout_s >= 0)) throw Error(rdInvalidArgument, "timeout must be >= 0 seconds");
      timeout_ms = static_cast<int>(std::min(std::ceil(*timeout_s * 1000.0), 2147483647.0));
    }
    rdResult_t status = rdSuccess;
    {
      py::gil_scoped_release unlocked;
      status = rdRequestWait(request_, timeout_ms);
    }
    return finishIf(check(status));
  }

 private:
  bool finishIf(rdResult_t status) {
    if (status != rdSuccess) return false;
    buffers_.clear();  // release the exporters' locks as soon as the data is in place
    return true;
  }

  rdRequest_t request_;
  std::vector<BufferArg> buffers_;
};

// The send and receive buffers of a collective, of one element type.
std::vector<BufferArg> sendRecv(const py::handle& send, const py::handle& recv,
                                const std::string& dtype) {
  std::vector<BufferArg> b;
  b.push_back(bufferArg(send, "send", false, dtype));
  b.push_back(bufferArg(recv, "recv", true, dtype));
  if (b[0].dtype != b[1].dtype) {
    throw Error(rdInvalidArgument, std::string("send holds ") + rdDataTypeName(b[0].dtype) +
                                       " but recv holds " + rdDataTypeName(b[1].dtype));
  }
  return b;
}

void expectCount(const char* what, size_t have, size_t want) {
  if (have != want) {
    throw Error(rdInvalidArgument, std::string(what) + " has " + std::to_string(have) +
                                       " elements; expected " + std::to_string(want));
  }
}

class Communicator {
 public:
  Communicator(int rank, int size, const py::bytes& unique_id, std::optional<double> timeout_s,
               const std::optional<std::string>& algorithm, std::optional<size_t> chunk_bytes,
               std::optional<int> window, std::optional<bool> deterministic,
               const std::optional<std::string>& wire_dtype) {
    std::string id_bytes = unique_id;
    if (id_bytes.size() > RD_UNIQUE_ID_BYTES) {
      throw Error(rdInvalidArgument, "unique_id is longer than a libreduce unique id");
    }
    rdUniqueId id{};
    std::copy(id_bytes.begin(), id_bytes.end(), id.internal);
    rdCommConfig_t config = RD_COMM_CONFIG_INITIALIZER;
    if (timeout_s) {
      if (!(*timeout_s > 0)) throw Error(rdInvalidArgument, "timeout must be > 0 seconds");
      config.timeout_ms =
          static_cast<int>(std::clamp(*timeout_s * 1000.0, double{rd::limits::kMinTimeoutMs},
                                      double{rd::limits::kMaxTimeoutMs}));
    }
    if (algorithm) check(rdAlgorithmFromName(algorithm->c_str(), &config.algorithm));
    if (chunk_bytes) config.chunk_bytes = *chunk_bytes;
    if (window) config.window = *window;
    if (deterministic) config.deterministic = *deterministic ? 1 : 0;
    if (wire_dtype) {
      rdDataType_t wire = rdFloat32;
      check(rdWireDtypeFromName(wire_dtype->c_str(), &wire));
      config.wire_dtype = wire;
    }
    rdResult_t status = rdSuccess;
    {
      py::gil_scoped_release unlocked;  // joining waits for every rank
      status = rdCommInitRankConfig(&comm_, size, id, rank, &config);
    }
    check(status);
  }

  explicit Communicator(rdComm_t comm) : comm_(comm) {}
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  ~Communicator() {
    if (comm_ == nullptr) return;
    try {
      close();
    } catch (...) {  // releasing the GIL failed: the interpreter is going away
      rdCommDestroy(std::exchange(comm_, nullptr));
    }
  }

  static std::unique_ptr<Communicator> fromEnv() {
    rdComm_t comm = nullptr;
    rdResult_t status = rdSuccess;
    {
      py::gil_scoped_release unlocked;
      status = rdCommInitFromEnv(&comm);
    }
    check(status);
    return std::make_unique<Communicator>(comm);
  }

  int rank() const {
    int r = 0;
    check(rdCommUserRank(live(), &r));
    return r;
  }
  int size() const {
    int n = 0;
    check(rdCommCount(live(), &n));
    return n;
  }

  py::object allReduce(const py::handle& send, const py::handle& recv, const std::string& op,
                       const std::string& dtype, bool async_op) {
    std::vector<BufferArg> b = sendRecv(send, recv, dtype);
    rdDataType_t t = b[0].dtype;
    expectCount("recv", b[1].count, b[0].count);
    rdRedOp_t rop = redOpByName(op);
    rdRequest_t request = nullptr;
    check(rdAllReduceAsync(b[0].data, b[1].data, b[0].count, t, rop, live(), &request));
    return finish(request, std::move(b), async_op);
  }

  py::object reduceScatter(const py::handle& send, const py::handle& recv, const std::string& op,
                           const std::string& dtype, bool async_op) {
    std::vector<BufferArg> b = sendRecv(send, recv, dtype);
    rdDataType_t t = b[0].dtype;
    expectCount("send", b[0].count, b[1].count * static_cast<size_t>(size()));
    rdRedOp_t rop = redOpByName(op);
    rdRequest_t request = nullptr;
    check(rdReduceScatterAsync(b[0].data, b[1].data, b[1].count, t, rop, live(), &request));
    return finish(request, std::move(b), async_op);
  }

  py::object allGather(const py::handle& send, const py::handle& recv, const std::string& dtype,
                       bool async_op) {
    std::vector<BufferArg> b = sendRecv(send, recv, dtype);
    rdDataType_t t = b[0].dtype;
    expectCount("recv", b[1].count, b[0].count * static_cast<size_t>(size()));
    rdRequest_t request = nullptr;
    check(rdAllGatherAsync(b[0].data, b[1].data, b[0].count, t, live(), &request));
    return finish(request, std::move(b), async_op);
  }

  py::object broadcast(const py::handle& send, const py::handle& recv, int root,
                       const std::string& dtype, bool async_op) {
    std::vector<BufferArg> b = sendRecv(send, recv, dtype);
    rdDataType_t t = b[0].dtype;
    expectCount("recv", b[1].count, b[0].count);
    rdRequest_t request = nullptr;
    check(rdBroadcastAsync(b[0].data, b[1].data, b[0].count, t, root, live(), &request));
    return finish(request, std::move(b), async_op);
  }

  py::object send(const py::handle& buf, int peer, int tag, const std::string& dtype,
                  bool async_op) {
    std::vector<BufferArg> b;
    b.push_back(bufferArg(buf, "buf", false, dtype));
    rdRequest_t request = nullptr;
    check(rdSendAsync(b[0].data, b[0].count, b[0].dtype, peer, tag, live(), &request));
    return finish(request, std::move(b), async_op);
  }

  // Synchronous: the sender's rank; asynchronous: the Request (its source once done).
  py::object recv(const py::handle& buf, std::optional<int> peer, int tag, const std::string& dtype,
                  bool async_op) {
    std::vector<BufferArg> b;
    b.push_back(bufferArg(buf, "buf", true, dtype));
    rdRequest_t request = nullptr;
    check(rdRecvAsync(b[0].data, b[0].count, b[0].dtype, peer ? *peer : RD_ANY_SOURCE, tag, live(),
                      &request));
    auto pending = std::make_unique<Request>(request, std::move(b));
    if (async_op) return py::cast(std::move(pending));
    pending->wait(std::nullopt);
    return py::int_(pending->source());
  }

  py::object barrier(bool async_op) {
    rdRequest_t request = nullptr;
    check(rdBarrierAsync(live(), &request));
    return finish(request, {}, async_op);
  }

  // What carries this rank's traffic to reducer @p reducer ("tcp/eth0"); "" while not known.
  std::string reducerTransports(int reducer) const {
    char text[512] = {};
    check(rdCommGetReducerTransports(live(), reducer, text, sizeof text));
    return text;
  }

  // The error that failed the communicator, or None while it is healthy.
  py::object asyncError() const {
    rdResult_t error = rdSuccess;
    check(rdCommGetAsyncError(live(), &error));
    if (error == rdSuccess) return py::none();
    return py::make_tuple(static_cast<int>(error), std::string(rdGetLastError()));
  }

  void abort() { check(rdCommAbort(live())); }

  void close() {
    if (comm_ == nullptr) return;
    rdComm_t comm = std::exchange(comm_, nullptr);
    py::gil_scoped_release unlocked;
    rdCommDestroy(comm);
  }

 private:
  rdComm_t live() const {
    if (comm_ == nullptr) throw Error(rdInvalidUsage, "the communicator is closed");
    return comm_;
  }

  static py::object finish(rdRequest_t request, std::vector<BufferArg> buffers, bool async_op) {
    auto pending = std::make_unique<Request>(request, std::move(buffers));
    if (async_op) return py::cast(std::move(pending));
    pending->wait(std::nullopt);
    return py::none();
  }

  rdComm_t comm_ = nullptr;
};

py::bytes uniqueId(const std::optional<std::string>& reducers,
                   const std::optional<std::string>& secret) {
  rdUniqueId id{};
  if (reducers || secret) {
    check(rdGetUniqueIdFor(reducers ? reducers->c_str() : nullptr,
                           secret ? secret->c_str() : nullptr, &id));
  } else {
    check(rdGetUniqueId(&id));
  }
  return {id.internal, sizeof id.internal};
}

py::bytes stripSecret(const py::bytes& unique_id) {
  std::string bytes = unique_id;
  rdUniqueId id{};
  std::copy_n(bytes.begin(), std::min(bytes.size(), sizeof id.internal), id.internal);
  check(rdUniqueIdStripSecret(&id));
  return {id.internal, sizeof id.internal};
}

std::string version() {
  int code = 0;
  check(rdGetVersion(&code));
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

}  // namespace
}  // namespace rd::python

PYBIND11_MODULE(_core, m) {
  using rd::python::Communicator;
  using rd::python::Request;
  m.doc() = "libreduce communicators and collectives (use the libreduce package)";

  // rd::Error becomes the libreduce.errors class of its status, message included.
  // NOLINTNEXTLINE(performance-unnecessary-value-param): pybind11's translator signature
  py::register_exception_translator([](std::exception_ptr raised) {
    try {
      if (raised) std::rethrow_exception(raised);
    } catch (const rd::Error& e) {
      py::object exc = py::module_::import("libreduce.errors")
                           .attr("error_for_status")(static_cast<int>(e.status()), e.what());
      PyErr_SetObject(py::type::handle_of(exc).ptr(), exc.ptr());
    }
  });

  m.def("version", &rd::python::version, "libreduce library version");
  m.def("unique_id", &rd::python::uniqueId, py::arg("reducers") = py::none(),
        py::arg("secret") = py::none(),
        "A fresh communicator id (bytes). Without arguments: reducers and secret from "
        "LIBREDUCE_REDUCERS / LIBREDUCE_SECRET(_FILE); without reducers this process serves "
        "the ring rendezvous.");
  m.def("strip_secret", &rd::python::stripSecret, py::arg("unique_id"),
        "The id without its secret: each rank then takes the secret from its environment.");
  m.def(
      "algorithms",
      [] {
        std::vector<std::string> names;
        names.reserve(rdNumAlgorithms);
        for (int a = 0; a < rdNumAlgorithms; ++a) {
          names.emplace_back(rdAlgorithmName(static_cast<rdAlgorithm_t>(a)));
        }
        return names;
      },
      "The names `algorithm` takes (LIBREDUCE_ALGO's values)");
  m.def(
      "status_name", [](int status) { return rdGetErrorString(static_cast<rdResult_t>(status)); },
      "The C library's name of a status code");
  m.def("data_type_size",
        [](const std::string& name) { return rdDataTypeSize(rd::python::dataTypeByName(name)); });

  py::class_<Request>(m, "Request")
      .def("test", &Request::test, "True when done; raises if the operation failed")
      .def("wait", &Request::wait, py::arg("timeout") = py::none(),
           "Waits up to timeout seconds (None: until it ends). True when done, False when the "
           "wait ran out; raises if the operation failed")
      .def_property_readonly("source", &Request::source, "the sender of a finished receive");

  py::class_<Communicator>(m, "Communicator")
      .def(py::init<int, int, const py::bytes&, std::optional<double>,
                    const std::optional<std::string>&, std::optional<size_t>, std::optional<int>,
                    std::optional<bool>, const std::optional<std::string>&>(),
           py::arg("rank"), py::arg("size"), py::arg("unique_id"), py::kw_only(),
           py::arg("timeout") = py::none(), py::arg("algorithm") = py::none(),
           py::arg("chunk_bytes") = py::none(), py::arg("window") = py::none(),
           py::arg("deterministic") = py::none(), py::arg("wire_dtype") = py::none())
      .def_static("from_env", &Communicator::fromEnv)
      .def_property_readonly("rank", &Communicator::rank)
      .def_property_readonly("size", &Communicator::size)
      .def("all_reduce", &Communicator::allReduce, py::arg("send"), py::arg("recv"),
           py::arg("op") = "sum", py::arg("dtype") = "", py::arg("async_op") = false)
      .def("reduce_scatter", &Communicator::reduceScatter, py::arg("send"), py::arg("recv"),
           py::arg("op") = "sum", py::arg("dtype") = "", py::arg("async_op") = false)
      .def("all_gather", &Communicator::allGather, py::arg("send"), py::arg("recv"),
           py::arg("dtype") = "", py::arg("async_op") = false)
      .def("broadcast", &Communicator::broadcast, py::arg("send"), py::arg("recv"), py::arg("root"),
           py::arg("dtype") = "", py::arg("async_op") = false)
      .def("send", &Communicator::send, py::arg("buf"), py::arg("peer"), py::arg("tag") = 0,
           py::arg("dtype") = "", py::arg("async_op") = false)
      .def("recv", &Communicator::recv, py::arg("buf"), py::arg("peer") = py::none(),
           py::arg("tag") = 0, py::arg("dtype") = "", py::arg("async_op") = false)
      .def("barrier", &Communicator::barrier, py::arg("async_op") = false)
      .def("reducer_transports", &Communicator::reducerTransports, py::arg("reducer"))
      .def("async_error", &Communicator::asyncError)
      .def("abort", &Communicator::abort)
      .def("close", &Communicator::close);
}
