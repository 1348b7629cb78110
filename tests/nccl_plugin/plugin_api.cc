// SPDX-License-Identifier: BSD-3-Clause
#include "plugin_api.h"

#include <dlfcn.h>

#include <cstdarg>
#include <cstdio>
#include <memory>
#include <vector>

namespace rd::test {

void harnessLogger(ncclDebugLogLevel level, unsigned long /*flags*/, const char* file, int line,
                   const char* fmt, ...) {
  char text[2048];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(text, sizeof text, fmt, args);
  va_end(args);
  const char* name = level == NCCL_LOG_WARN ? "WARN" : level == NCCL_LOG_INFO ? "INFO" : "LOG";
  std::fprintf(stderr, "[nccl-logger %s] %s:%d %s\n", name, file, line, text);
}

namespace {

constexpr uint64_t kNcclCommHash = 0x1234abcdull;  // what NCCL passes as its comm's hash (v11+)
constexpr int kNoDmaBufFd = -1;

template <typename Props>
ncclResult_t readProps(ncclResult_t (*get)(int, Props*), int dev, int* ptr_support,
                       int* max_recvs) {
  Props props{};
  ncclResult_t res = get(dev, &props);
  *ptr_support = props.ptrSupport;
  if (max_recvs != nullptr) *max_recvs = props.maxRecvs;
  return res;
}

template <int V, typename Net>
void bindNet(Net* n, NetApi* api) {
  auto ctx = std::make_shared<void*>(nullptr);
  if constexpr (V >= 11) {
    api->init = [n, ctx] {
      ncclNetCommConfig_t config{-1};
      return n->init(ctx.get(), kNcclCommHash, &config, harnessLogger, nullptr);
    };
    api->listen = [n, ctx](void* h, void** l) { return n->listen(*ctx, 0, h, l); };
    api->connect = [n, ctx](void* h, void** s) {
      ncclNetDeviceHandle_t* dev = nullptr;
      return n->connect(*ctx, 0, h, s, &dev);
    };
    api->finalize = [n, ctx] { return n->finalize(*ctx); };
  } else {
    if constexpr (V == 10) {
      api->init = [n] { return n->init(harnessLogger, nullptr); };
      api->connect = [n](void* h, void** s) {
        ncclNetCommConfig_t config{-1};
        ncclNetDeviceHandle_t* dev = nullptr;
        return n->connect(0, &config, h, s, &dev);
      };
    } else {
      api->init = [n] { return n->init(harnessLogger); };
      api->connect = [n](void* h, void** s) {
        ncclNetDeviceHandle_t* dev = nullptr;
        return n->connect(0, h, s, &dev);
      };
    }
    api->listen = [n](void* h, void** l) { return n->listen(0, h, l); };
    api->finalize = [] { return ncclSuccess; };
  }
  if constexpr (V == 8) {
    api->isend = [n](void* c, void* d, size_t size, int tag, void* mh, void** r) {
      return n->isend(c, d, static_cast<int>(size), tag, mh, r);
    };
    api->irecv = [n](void* c, int count, void** d, size_t* sizes, int* tags, void** mh, void** r) {
      std::vector<int> narrow(sizes, sizes + count);
      return n->irecv(c, count, d, narrow.data(), tags, mh, r);
    };
  } else if constexpr (V == 9) {
    api->isend = [n](void* c, void* d, size_t size, int tag, void* mh, void** r) {
      return n->isend(c, d, size, tag, mh, r);
    };
    api->irecv = [n](void* c, int count, void** d, size_t* sizes, int* tags, void** mh, void** r) {
      return n->irecv(c, count, d, sizes, tags, mh, r);
    };
  } else {
    api->isend = [n](void* c, void* d, size_t size, int tag, void* mh, void** r) {
      return n->isend(c, d, size, tag, mh, nullptr, r);
    };
    api->irecv = [n](void* c, int count, void** d, size_t* sizes, int* tags, void** mh, void** r) {
      std::vector<void*> phandles(static_cast<size_t>(count), nullptr);
      return n->irecv(c, count, d, sizes, tags, mh, phandles.data(), r);
    };
  }
  api->devices = [n](int* d) { return n->devices(d); };
  api->properties = [n](int dev, int* ptr, int* recvs) {
    return readProps(n->getProperties, dev, ptr, recvs);
  };
  api->accept = [n](void* l, void** r) {
    ncclNetDeviceHandle_t* dev = nullptr;
    return n->accept(l, r, &dev);
  };
  api->regMr = [n](void* c, void* d, size_t size, void** mh) {
    return n->regMr(c, d, size, kNcclPtrHost, mh);
  };
  api->deregMr = [n](void* c, void* mh) { return n->deregMr(c, mh); };
  api->iflush = [n](void* c, int count, void** d, int* sizes, void** mh, void** r) {
    return n->iflush(c, count, d, sizes, mh, r);
  };
  api->regMrDmaBuf = [n](void* c, void* d, size_t size, void** mh) {
    return n->regMrDmaBuf(c, d, size, kNcclPtrHost, 0, kNoDmaBufFd, mh);
  };
  api->test = [n](void* r, int* done, int* sizes) { return n->test(r, done, sizes); };
  api->closeSend = [n](void* c) { return n->closeSend(c); };
  api->closeRecv = [n](void* c) { return n->closeRecv(c); };
  api->closeListen = [n](void* c) { return n->closeListen(c); };
}

template <typename SgeT>
std::vector<SgeT> narrowParts(int nparts, const Sge* parts) {
  std::vector<SgeT> out(static_cast<size_t>(nparts));
  for (int i = 0; i < nparts; ++i) {
    out[i].mhandle = parts[i].mhandle;
    out[i].address = parts[i].address;
    out[i].size = static_cast<decltype(out[i].size)>(parts[i].size);
  }
  return out;
}

template <int V, typename Coll>
void bindCollNet(Coll* c, CollNetApi* api) {
  using SgeT = std::conditional_t<V == 8, ncclNetSGE_v8_t, ncclNetSGE_v9_t>;
  auto ctx = std::make_shared<void*>(nullptr);
  if constexpr (V >= 11) {
    api->init = [c, ctx] { return c->init(ctx.get(), kNcclCommHash, harnessLogger); };
    api->listen = [c, ctx](void* h, void** l) { return c->listen(*ctx, 0, h, l); };
    api->finalize = [c, ctx] { return c->finalize(*ctx); };
    api->openContext = [c](uint64_t id, void** x) { return c->init(x, id, harnessLogger); };
    api->listenIn = [c](void* x, void* h, void** l) { return c->listen(x, 0, h, l); };
    api->finalizeContext = [c](void* x) { return c->finalize(x); };
  } else {
    api->init = [c] { return c->init(harnessLogger); };
    api->listen = [c](void* h, void** l) { return c->listen(0, h, l); };
    api->finalize = [] { return ncclSuccess; };
  }
  api->iallreduce = [c](void* comm, void* s, void* r, size_t count, int dtype, int op, void* smh,
                        void* rmh, void** req) {
    using Count = std::conditional_t<V == 8, int, size_t>;
    return c->iallreduce(comm, s, r, static_cast<Count>(count), static_cast<ncclDataType_t>(dtype),
                         static_cast<ncclRedOp_t>(op), smh, rmh, req);
  };
  api->iallgather = [c](void* comm, void* s, int nparts, const Sge* parts, size_t bpr,
                        size_t offset, size_t bytes, void* send_mh, void** req) {
    auto sges = narrowParts<SgeT>(nparts, parts);
    return c->iallgather(comm, s, nparts, sges.data(), bpr, offset, bytes, send_mh, req);
  };
  api->ireducescatter = [c](void* comm, int nparts, const Sge* parts, void* r, size_t bpr,
                            size_t offset, size_t bytes, int dtype, int op, void* recv_mh,
                            void** req) {
    auto sges = narrowParts<SgeT>(nparts, parts);
    return c->ireducescatter(comm, nparts, sges.data(), r, bpr, offset, bytes,
                             static_cast<ncclDataType_t>(dtype), static_cast<ncclRedOp_t>(op),
                             recv_mh, req);
  };
  api->iflush = [c](void* comm, void* d, int size, void* mh, void** req) {
    return c->iflush(comm, d, size, mh, req);
  };
  api->regMrDmaBuf = [c](void* comm, void* d, size_t size, void** mh) {
    return c->regMrDmaBuf(comm, d, size, kNcclPtrHost, 0, kNoDmaBufFd, mh);
  };
  api->devices = [c](int* d) { return c->devices(d); };
  api->properties = [c](int dev, int* ptr) {
    return readProps(c->getProperties, dev, ptr, nullptr);
  };
  api->connect = [c](void** handles, int nranks, int rank, void* l, void** coll) {
    return c->connect(handles, nranks, rank, l, coll);
  };
  api->reduceSupport = [c](int dtype, int op, int* supported) {
    return c->reduceSupport(static_cast<ncclDataType_t>(dtype), static_cast<ncclRedOp_t>(op),
                            supported);
  };
  api->regMr = [c](void* comm, void* d, size_t size, void** mh) {
    return c->regMr(comm, d, size, kNcclPtrHost, mh);
  };
  api->deregMr = [c](void* comm, void* mh) { return c->deregMr(comm, mh); };
  api->test = [c](void* r, int* done, int* size) { return c->test(r, done, size); };
  api->closeColl = [c](void* comm) { return c->closeColl(comm); };
  api->closeListen = [c](void* l) { return c->closeListen(l); };
}

template <int V, typename Net, typename Coll>
bool bindVersion(void* lib, LoadedPlugin* out, std::string* error) {
  std::string net_name = "ncclNetPlugin_v" + std::to_string(V);
  std::string coll_name = "ncclCollNetPlugin_v" + std::to_string(V);
  auto* net = static_cast<Net*>(dlsym(lib, net_name.c_str()));
  auto* coll = static_cast<Coll*>(dlsym(lib, coll_name.c_str()));
  if (net == nullptr || coll == nullptr) {
    *error = "missing " + (net == nullptr ? net_name : coll_name);
    return false;
  }
  out->version = V;
  bindNet<V>(net, &out->net);
  bindCollNet<V>(coll, &out->collnet);
  return true;
}

bool bindAny(void* lib, int version, LoadedPlugin* out, std::string* error) {
  switch (version) {
    case 12: return bindVersion<12, ncclNet_v12_t, ncclCollNet_v12_t>(lib, out, error);
    case 11: return bindVersion<11, ncclNet_v11_t, ncclCollNet_v11_t>(lib, out, error);
    case 10: return bindVersion<10, ncclNet_v10_t, ncclCollNet_v10_t>(lib, out, error);
    case 9: return bindVersion<9, ncclNet_v9_t, ncclCollNet_v9_t>(lib, out, error);
    case 8: return bindVersion<8, ncclNet_v8_t, ncclCollNet_v8_t>(lib, out, error);
    default:
      *error = "the harness drives versions 8 to 12, not " + std::to_string(version);
      return false;
  }
}

}  // namespace

bool loadPlugin(const std::string& path, int version, LoadedPlugin* out, std::string* error) {
  out->library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (out->library == nullptr) {
    *error = std::string("dlopen: ") + dlerror();
    return false;
  }
  if (version == 0) {  // NCCL's order: the newest Net struct the library exports wins
    for (int v = 12; v >= 6; --v) {
      std::string name = "ncclNetPlugin_v" + std::to_string(v);
      if (dlsym(out->library, name.c_str()) != nullptr) {
        version = v;
        break;
      }
    }
  }
  return bindAny(out->library, version, out, error);
}

}  // namespace rd::test
