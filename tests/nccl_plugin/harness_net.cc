// SPDX-License-Identifier: BSD-3-Clause
// Net checks: the ring is set up with NCCL's non-blocking connect / accept loop, then messages
// of several sizes move rank -> rank + 1 with receives posted before the send (matched on
// arrival), after it (held until posted), grouped, and with one tag used twice (order kept).
#include <cstring>
#include <thread>

#include "harness.h"

namespace rd::test {

namespace {

unsigned char patternByte(int sender, int message, size_t j) {
  return static_cast<unsigned char>(sender * 31 + message * 7 + static_cast<int>(j % 251) * 13);
}

struct Message {
  int tag;
  size_t size;
  std::vector<unsigned char> send;
  std::vector<unsigned char> recv;  // capacity size + 64: the plugin must report the real size
  void* send_mh = nullptr;
  void* recv_mh = nullptr;
  void* send_req = nullptr;
  int received = -1;
};

bool loopUntilComm(const std::function<ncclResult_t(void**)>& step, void** comm, const char* what) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (*comm == nullptr) {
    ncclResult_t res = step(comm);
    if (res != ncclSuccess) {
      std::fprintf(stderr, "%s failed: %d\n", what, static_cast<int>(res));
      return false;
    }
    if (*comm != nullptr) break;
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "%s: no comm in time\n", what);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

bool postReceive(const NetApi& net, const NetRing& ring, const std::vector<Message*>& group,
                 void** request) {
  std::vector<void*> data;
  std::vector<size_t> sizes;
  std::vector<int> tags;
  std::vector<void*> mhs;
  for (Message* m : group) {
    data.push_back(m->recv.data());
    sizes.push_back(m->recv.size());
    tags.push_back(m->tag);
    mhs.push_back(m->recv_mh);
  }
  ncclResult_t res = net.irecv(ring.recv, static_cast<int>(group.size()), data.data(), sizes.data(),
                               tags.data(), mhs.data(), request);
  if (res != ncclSuccess || *request == nullptr) {
    std::fprintf(stderr, "irecv failed: %d\n", static_cast<int>(res));
    return false;
  }
  return true;
}

bool waitReceive(const NetApi& net, void* request, const std::vector<Message*>& group) {
  int sizes[8] = {};
  if (!testUntilDone([&](int* done) { return net.test(request, done, sizes); }, "irecv")) {
    return false;
  }
  for (size_t i = 0; i < group.size(); ++i) group[i]->received = sizes[i];
  return true;
}

// NCCL flushes a receive before the GPU reads it; host memory needs none, so the flush completes
// at once. DMA-BUF registration is refused: ptrSupport never offers it.
bool flushAndRefuseDmaBuf(const NetApi& net, const NetRing& ring, Message* m) {
  void* data = m->recv.data();
  int size = m->received;
  void* request = reinterpret_cast<void*>(1);
  if (net.iflush(ring.recv, 1, &data, &size, &m->recv_mh, &request) != ncclSuccess ||
      (request != nullptr &&
       !testUntilDone([&](int* done) { return net.test(request, done, nullptr); }, "iflush"))) {
    std::fprintf(stderr, "Net iflush did not complete\n");
    return false;
  }
  void* mh = nullptr;
  if (net.regMrDmaBuf(ring.recv, m->recv.data(), m->recv.size(), &mh) == ncclSuccess ||
      mh != nullptr) {
    std::fprintf(stderr, "Net regMrDmaBuf accepted a DMA-BUF it never offered\n");
    return false;
  }
  return true;
}

}  // namespace

bool netRefusesWrongSecret(const NetApi& net, const FileExchange& ex) {
  using Clock = std::chrono::steady_clock;
  char handle[kNcclNetHandleMaxSize] = {};
  void* listen = nullptr;
  if (net.listen(handle, &listen) != ncclSuccess || !ex.publish("net", std::string(handle, 128))) {
    return false;
  }
  auto start = Clock::now();
  auto ms = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  };
  if (ex.rank() == 0) {  // accepts for 5 s: the peer with another secret must never get in
    void* recv = nullptr;
    while (recv == nullptr && ms() < 5000) {
      if (net.accept(listen, &recv) != ncclSuccess) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (recv != nullptr) {
      std::fprintf(stderr, "accepted a peer that holds another secret\n");
      return false;
    }
    std::printf("EXPECTED REFUSAL accept: no comm in %lld ms\n", static_cast<long long>(ms()));
    return net.closeListen(listen) == ncclSuccess;
  }
  std::string theirs;
  if (!ex.fetch("net", 0, &theirs)) return false;
  std::memcpy(handle, theirs.data(), sizeof handle);
  void* send = nullptr;
  if (!loopUntilComm([&](void** c) { return net.connect(handle, c); }, &send, "connect")) {
    return false;
  }
  std::vector<char> data(64, 'x');
  void* request = nullptr;
  ncclResult_t result = net.isend(send, data.data(), data.size(), 7, nullptr, &request);
  if (result == ncclSuccess && request == nullptr) {
    std::fprintf(stderr, "isend posted nothing\n");
    return false;
  }
  if (result == ncclSuccess) {
    testUntilDone([&](int* done) { return net.test(request, done, nullptr); }, "isend", &result,
                  std::chrono::seconds(15));
  }
  std::printf("EXPECTED ERROR isend code=%d in %lld ms\n", static_cast<int>(result),
              static_cast<long long>(ms()));
  net.closeSend(send);
  return result != ncclSuccess && net.closeListen(listen) == ncclSuccess;
}

bool netSetUp(const NetApi& net, const FileExchange& ex, NetRing* ring) {
  int ndev = 0, ptr = 0, max_recvs = 0;
  if (net.devices(&ndev) != ncclSuccess || ndev != 1 ||
      net.properties(0, &ptr, &max_recvs) != ncclSuccess || (ptr & kNcclPtrHost) == 0 ||
      max_recvs < 2) {
    std::fprintf(stderr, "Net devices/properties wrong: ndev %d ptr %d maxRecvs %d\n", ndev, ptr,
                 max_recvs);
    return false;
  }
  char handle[kNcclNetHandleMaxSize] = {};
  if (net.listen(handle, &ring->listen) != ncclSuccess) return false;
  if (!ex.publish("net", std::string(handle, sizeof handle))) return false;
  std::string next;
  if (!ex.fetch("net", (ex.rank() + 1) % ex.nranks(), &next)) return false;
  std::memcpy(handle, next.data(), sizeof handle);
  // NCCL alternates connect and accept until both return a comm.
  if (!loopUntilComm([&](void** c) { return net.connect(handle, c); }, &ring->send, "connect")) {
    return false;
  }
  return loopUntilComm([&](void** c) { return net.accept(ring->listen, c); }, &ring->recv,
                       "accept");
}

bool netTransfers(const NetApi& net, const FileExchange& ex, const NetRing& ring) {
  const size_t sizes[] = {0, 1, 4099, (1u << 20) + 3, 8u << 20, 10, 20};
  const int tags[] = {100, 101, 102, 103, 104, 200, 200};  // the last two share a tag
  std::vector<Message> msgs(std::size(sizes));
  int sender = (ex.rank() + ex.nranks() - 1) % ex.nranks();
  for (size_t k = 0; k < msgs.size(); ++k) {
    Message& m = msgs[k];
    m.tag = tags[k];
    m.size = sizes[k];
    m.send.resize(m.size + 1);
    for (size_t j = 0; j < m.size; ++j) m.send[j] = patternByte(ex.rank(), static_cast<int>(k), j);
    m.recv.assign(m.size + 64, 0xEE);
    if (net.regMr(ring.send, m.send.data(), m.send.size(), &m.send_mh) != ncclSuccess ||
        net.regMr(ring.recv, m.recv.data(), m.recv.size(), &m.recv_mh) != ncclSuccess) {
      return false;
    }
  }
  // Receives posted before anything was sent: 0, 2 and 4.
  void* early[3] = {};
  for (int i = 0; i < 3; ++i) {
    if (!postReceive(net, ring, {&msgs[2 * static_cast<size_t>(i)]}, &early[i])) return false;
  }
  for (size_t k = 0; k < msgs.size(); ++k) {
    Message& m = msgs[k];
    ncclResult_t res = net.isend(ring.send, m.send.data(), m.size, m.tag, m.send_mh, &m.send_req);
    if (res != ncclSuccess || m.send_req == nullptr) {
      std::fprintf(stderr, "isend %zu failed: %d\n", k, static_cast<int>(res));
      return false;
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // 1, 3, 5, 6 arrive first
  void* grouped = nullptr;
  void* same_tag[2] = {};
  if (!postReceive(net, ring, {&msgs[1], &msgs[3]}, &grouped) ||
      !postReceive(net, ring, {&msgs[5]}, &same_tag[0]) ||
      !postReceive(net, ring, {&msgs[6]}, &same_tag[1])) {
    return false;
  }
  bool ok = true;
  for (int i = 0; i < 3; ++i)
    ok = ok && waitReceive(net, early[i], {&msgs[2 * static_cast<size_t>(i)]});
  ok = ok && waitReceive(net, grouped, {&msgs[1], &msgs[3]});
  ok = ok && waitReceive(net, same_tag[0], {&msgs[5]});
  ok = ok && waitReceive(net, same_tag[1], {&msgs[6]});
  for (Message& m : msgs) {
    ok = ok &&
         testUntilDone([&](int* done) { return net.test(m.send_req, done, nullptr); }, "isend");
  }
  if (!ok) return false;
  for (size_t k = 0; k < msgs.size(); ++k) {
    const Message& m = msgs[k];
    if (m.received != static_cast<int>(m.size)) {
      std::fprintf(stderr, "message %zu: received %d bytes, sent %zu\n", k, m.received, m.size);
      return false;
    }
    for (size_t j = 0; j < m.size; ++j) {
      if (m.recv[j] != patternByte(sender, static_cast<int>(k), j)) {
        std::fprintf(stderr, "message %zu: byte %zu wrong\n", k, j);
        return false;
      }
    }
    if (m.recv[m.size] != 0xEE) {
      std::fprintf(stderr, "message %zu: wrote past its size\n", k);
      return false;
    }
  }
  if (!flushAndRefuseDmaBuf(net, ring, &msgs[3])) return false;
  for (Message& m : msgs) {
    if (net.deregMr(ring.send, m.send_mh) != ncclSuccess ||
        net.deregMr(ring.recv, m.recv_mh) != ncclSuccess) {
      return false;
    }
  }
  std::printf("net transfers ok: %zu messages from rank %d\n", msgs.size(), sender);
  return true;
}

bool netTearDown(const NetApi& net, const NetRing& ring) {
  return net.closeSend(ring.send) == ncclSuccess && net.closeRecv(ring.recv) == ncclSuccess &&
         net.closeListen(ring.listen) == ncclSuccess;
}

}  // namespace rd::test
