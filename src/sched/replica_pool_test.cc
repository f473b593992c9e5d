// The replica pool against its promises: every replica on a thread of its own, started together;
// the first failure rethrown after every thread ended, the others told to stop; stop() seen by
// every body.
#include "sched/replica_pool.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <set>
#include <stdexcept>
#include <thread>

#include "core/error.h"
#include "core/system.h"

namespace mcinfer::sched {
namespace {

// A replica that remembers which it is; predict() is never called here.
class CountingReplica final : public backend::Replica {
 public:
  explicit CountingReplica(int index) : index(index) {}
  void predict(std::span<const model::SequenceInput>, const model::TaskSpec&,
               std::vector<float>&) override {}
  double last_flops() const override { return 0; }
  void attach_profile(backend::OpProfile*) override {}
  int index;
};

class CountingModel final : public backend::PreparedModel {
 public:
  const model::ModelConfig& config() const override { return config_; }
  model::Precision precision() const override { return model::Precision::kFp32; }
  const backend::WeightStats& stats() const override { return stats_; }
  std::unique_ptr<backend::Replica> make_replica(int threads) const override {
    threads_asked.push_back(threads);
    return std::make_unique<CountingReplica>(static_cast<int>(threads_asked.size()) - 1);
  }
  mutable std::vector<int> threads_asked;

 private:
  model::ModelConfig config_;
  backend::WeightStats stats_;
};

TEST(ReplicaPool, RunsEachReplicaOnItsOwnThread) {
  auto model = std::make_shared<CountingModel>();
  ReplicaPool pool(model, {4, 2, false});
  ASSERT_EQ(pool.size(), 4);
  EXPECT_EQ(model->threads_asked, std::vector<int>(4, 2));
  std::vector<std::thread::id> ids(4);
  std::vector<int> seen(4, -1);
  const double seconds = pool.run([&](int r, backend::Replica& replica) {
    ids[r] = std::this_thread::get_id();
    seen[r] = static_cast<CountingReplica&>(replica).index;
  });
  EXPECT_GE(seconds, 0);
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(std::set<std::thread::id>(ids.begin(), ids.end()).size(), 4u);
  EXPECT_EQ(ids[0] == std::this_thread::get_id(), false);
}

TEST(ReplicaPool, RethrowsTheFirstFailureAfterEveryThreadEnded) {
  ReplicaPool pool(std::make_shared<CountingModel>(), {3, 1, false});
  std::atomic<int> ended{0}, stopped_hooks{0};
  try {
    pool.run(
        [&](int r, backend::Replica&) {
          if (r == 1) fail("replica 1 failed");
          // The others run until told to stop, as a run's replicas do.
          while (!pool.stopping()) std::this_thread::yield();
          ++ended;
        },
        [&] { ++stopped_hooks; });
    FAIL() << "no failure came out of the pool";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "replica 1 failed");
  }
  EXPECT_EQ(ended.load(), 2);
  EXPECT_EQ(stopped_hooks.load(), 1);
  EXPECT_TRUE(pool.stopping());
}

TEST(ReplicaPool, StopIsSeenByEveryBody) {
  ReplicaPool pool(std::make_shared<CountingModel>(), {2, 1, true});
  std::atomic<int> done{0};
  pool.run([&](int r, backend::Replica&) {
    if (r == 0) pool.stop();
    while (!pool.stopping()) std::this_thread::yield();
    ++done;
  });
  EXPECT_EQ(done.load(), 2);
}

// Ranks sharing a host start their replicas at different cores: replica r of a pool whose
// first_cpu is F runs on the host's (F + r)-th core, wrapping around.
TEST(ReplicaPool, PinsFromTheFirstCpuItIsGiven) {
  const std::vector<int> cpus = sys::cpus_by_core();
  if (cpus.size() < 2) GTEST_SKIP() << "one core: nothing to tell apart";
  for (int first : {0, 1}) {
    ReplicaPool pool(std::make_shared<CountingModel>(),
                     {.replicas = 2, .threads_per_replica = 1, .pin = true, .first_cpu = first});
    std::vector<int> ran(2, -1);
    pool.run(
        [&](int r, backend::Replica&) { ran[static_cast<std::size_t>(r)] = ::sched_getcpu(); });
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(ran[static_cast<std::size_t>(r)],
                cpus[static_cast<std::size_t>(first + r) % cpus.size()])
          << "first_cpu " << first << " replica " << r;
    }
  }
}

}  // namespace
}  // namespace mcinfer::sched
