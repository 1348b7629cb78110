// SPDX-License-Identifier: BSD-3-Clause
#include "world.h"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "common/dtype.h"

namespace rd::test {

namespace {

uint64_t freshCommId() {
  static std::atomic<uint64_t> next{std::random_device{}() | 1};
  return next.fetch_add(2);
}

// Buffers of one rank's operation; kept until the world ends, since an operation that did not
// finish in time may still write into them.
struct Buffers {
  std::vector<char> send, recv;
};

std::unique_ptr<server::ReductionServer> startReducer(
    const WorldOptions& options, int m, uint16_t port, const std::string& secret,
    std::shared_ptr<transport::ProgressEngine> e) {
  server::ServerOptions so;
  so.host = "reducer" + std::to_string(m);
  so.port = port;
  so.secret = secret;
  so.memory_limit = options.reducer_memory;
  so.quota.memory_percent = options.reducer_memory_percent;
  so.transport = "loopback";
  so.engine = std::move(e);
  std::unique_ptr<server::ReductionServer> s;
  EXPECT_EQ(server::ReductionServer::start(so, &s), rdSuccess) << lastError();
  return s;
}
}  // namespace

World::World(WorldOptions options) : options_(std::move(options)), comm_id_(freshCommId()) {
  engine_ = transport::ProgressEngine::create(0);
  for (int m = 0; m < options_.reducers; ++m) {
    std::unique_ptr<server::ReductionServer> s =
        startReducer(options_, m, 0, options_.secret, engine_);
    addresses_.push_back(s ? s->address() : "");
    reducers_.push_back(std::move(s));
  }
  if (options_.reducers == 0) {
    server::ServerOptions so;
    so.host = "rendezvous";
    so.secret = options_.secret;
    so.transport = "loopback";
    so.engine = engine_;
    EXPECT_EQ(server::ReductionServer::start(so, &rendezvous_), rdSuccess) << lastError();
    if (rendezvous_) rendezvous_address_ = rendezvous_->address();
  }
  ranks_.resize(options_.ranks);
}

World::~World() {
  std::vector<std::thread> leaving;
  for (auto& r : ranks_) {
    if (r) leaving.emplace_back([&r] { r.reset(); });
  }
  for (auto& t : leaving) t.join();
  kept_.clear();  // no operation writes into them any more
  reducers_.clear();
  rendezvous_.reset();
  engine_.reset();
  transport::loopback::Fabric::reset();
}

coll::CommConfig World::config(int r) const {
  coll::CommConfig c;
  for (const auto& a : addresses_) c.reducers.push_back(a);
  c.rendezvous = rendezvous_address_;
  c.secret = options_.secret;
  c.comm_id = comm_id_;
  c.rank = static_cast<uint32_t>(r);
  c.nranks = static_cast<uint32_t>(options_.ranks);
  c.chunk_bytes = options_.chunk_bytes;
  c.window = options_.window;
  c.timeout_ms = options_.timeout_ms;
  c.heartbeat_ms = options_.heartbeat_ms;
  c.failover = options_.failover;
  c.algorithm = options_.algorithm;
  c.deterministic = options_.deterministic;
  c.wire_dtype = options_.wire_dtype;
  c.listen_host = "rank" + std::to_string(r);
  c.transport = "loopback";
  c.engine = engine_;
  return c;
}

rdResult_t World::join() {
  std::vector<coll::CommConfig> configs;
  for (int r = 0; r < options_.ranks; ++r) configs.push_back(config(r));
  return join(configs);
}

rdResult_t World::join(const std::vector<coll::CommConfig>& configs) {
  join_outcomes_.assign(configs.size(), Outcome{});
  std::vector<std::thread> joining;
  for (size_t r = 0; r < configs.size(); ++r) {
    joining.emplace_back([this, r, &configs] {
      rdResult_t st = coll::Communicator::create(configs[r], &ranks_[r]);
      join_outcomes_[r].status = st;
      if (st != rdSuccess) join_outcomes_[r].error = lastError();
    });
  }
  for (auto& t : joining) t.join();
  for (const Outcome& o : join_outcomes_) {
    if (o.status != rdSuccess) return o.status;
  }
  return rdSuccess;
}

void World::destroyRank(int r) {
  ranks_.at(r).reset();
}

World::Posted World::start(Collective coll, size_t count, rdDataType_t dtype, rdRedOp_t op,
                           const std::function<void(int, coll::OpDesc*)>& per_rank) {
  const int n = options_.ranks;
  const size_t esize = dtypeSize(dtype);
  const int seq = operations_++;
  Posted p{coll, dtype, op, seq % n, perf::opSalt(comm_id_, static_cast<uint64_t>(seq)),
           {},   {},    {}, {}};
  p.descs.resize(n);
  p.requests.resize(n);
  p.outcomes.resize(n);
  for (int r = 0; r < n; ++r) {
    auto b = std::make_shared<Buffers>();
    size_t send_elems = coll == Collective::kReduceScatter ? count * n : count;
    size_t recv_elems = coll == Collective::kAllGather ? count * n : count;
    b->send.assign(send_elems * esize + 1, 0);
    b->recv.assign(recv_elems * esize + 1, 0);
    // Every rank its own data, a broadcast's too: only the root's may arrive.
    perf::fillExact(b->send.data(), send_elems, r, 0, dtype, op, p.salt);
    coll::OpDesc& d = p.descs[r];
    d.coll = coll;
    d.send = coll == Collective::kBarrier ? nullptr : b->send.data();
    d.recv = coll == Collective::kBarrier ? nullptr : b->recv.data();
    d.count = coll == Collective::kBarrier ? 0 : count;
    d.dtype = coll == Collective::kBarrier ? rdUint8 : dtype;
    d.op = op;
    d.root = static_cast<uint32_t>(p.root);
    if (per_rank) per_rank(r, &d);
    p.buffers.push_back(b);
    kept_.push_back(b);
  }
  for (int r = 0; r < n; ++r) {
    if (!ranks_[r]) {
      p.outcomes[r] = {rdInvalidUsage, "rank " + std::to_string(r) + " has no communicator", 0};
      continue;
    }
    rdResult_t st = ranks_[r]->post(p.descs[r], &p.requests[r]);
    if (st != rdSuccess) p.outcomes[r] = {st, lastError(), 0};
  }
  return p;
}

Outcome World::finish(Posted& p, int r, Clock::time_point deadline) {
  Outcome& out = p.outcomes[r];
  if (!p.requests[r]) return out;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  rdResult_t st = p.requests[r]->wait(static_cast<int>(std::max<int64_t>(0, left.count())));
  out.status = st;
  if (st != rdSuccess) {
    out.error = st == rdInProgress ? "still running after the test's limit" : lastError();
    return out;
  }
  const int n = options_.ranks;
  const size_t esize = dtypeSize(p.dtype);
  const coll::OpDesc& d = p.descs[r];
  const char* got = static_cast<const Buffers*>(p.buffers[r].get())->recv.data();
  // A compressed result was last rounded to the wire type (its avg tolerance).
  const rdDataType_t precision = p.dtype == rdFloat32 ? options_.wire_dtype : p.dtype;
  switch (p.coll) {
    case Collective::kAllReduce:
      out.wrong = perf::countWrongReduction(got, d.count, 0, n, p.dtype, p.op, precision, p.salt);
      break;
    case Collective::kReduceScatter:
      out.wrong =
          perf::countWrongReduction(got, d.count, r * d.count, n, p.dtype, p.op, precision, p.salt);
      break;
    case Collective::kAllGather:
      for (int q = 0; q < n; ++q) {
        out.wrong +=
            perf::countWrongCopy(got + q * d.count * esize, d.count, q, 0, p.dtype, p.op, p.salt);
      }
      break;
    case Collective::kBroadcast:
      out.wrong = perf::countWrongCopy(got, d.count, p.root, 0, p.dtype, p.op, p.salt);
      break;
    case Collective::kBarrier: break;
  }
  return out;
}

std::vector<Outcome> World::run(Collective coll, size_t count, rdDataType_t dtype, rdRedOp_t op,
                                std::chrono::milliseconds limit,
                                const std::function<void(int, coll::OpDesc*)>& per_rank) {
  Posted p = start(coll, count, dtype, op, per_rank);
  auto deadline = Clock::now() + limit;
  for (int r = 0; r < options_.ranks; ++r) finish(p, r, deadline);
  return p.outcomes;
}

::testing::AssertionResult allCorrect(const std::vector<Outcome>& outcomes) {
  for (size_t r = 0; r < outcomes.size(); ++r) {
    const Outcome& o = outcomes[r];
    if (o.status != rdSuccess) {
      return ::testing::AssertionFailure()
             << "rank " << r << ": " << rdGetErrorString(o.status) << ": " << o.error;
    }
    if (o.wrong != 0) {
      return ::testing::AssertionFailure() << "rank " << r << ": " << o.wrong << " wrong";
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult allFailedNaming(const std::vector<Outcome>& outcomes,
                                           const std::string& culprit) {
  for (size_t r = 0; r < outcomes.size(); ++r) {
    const Outcome& o = outcomes[r];
    if (o.status >= 0) {
      return ::testing::AssertionFailure()
             << "rank " << r << " did not fail: " << rdGetErrorString(o.status);
    }
    if (o.error.find(culprit) == std::string::npos) {
      return ::testing::AssertionFailure()
             << "rank " << r << "'s error does not name " << culprit << ": " << o.error;
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult correctOrFailed(const std::vector<Outcome>& outcomes) {
  for (size_t r = 0; r < outcomes.size(); ++r) {
    const Outcome& o = outcomes[r];
    if (o.status == rdInProgress) {
      return ::testing::AssertionFailure() << "rank " << r << " never finished";
    }
    if (o.status == rdSuccess && o.wrong != 0) {
      return ::testing::AssertionFailure()
             << "rank " << r << ": " << o.wrong << " wrong elements reported as success";
    }
    if (o.status < 0 && o.error.empty()) {
      return ::testing::AssertionFailure() << "rank " << r << " failed without saying why";
    }
  }
  return ::testing::AssertionSuccess();
}

void World::replaceReducer(int m, const std::string& secret) {
  reducers_.at(m).reset();  // frees its address
  const std::string& address = addresses_.at(m);
  auto port = static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1)));
  reducers_[m] = startReducer(options_, m, port, secret, engine_);
  EXPECT_TRUE(reducers_[m] && reducers_[m]->address() == address);
}

}  // namespace rd::test
