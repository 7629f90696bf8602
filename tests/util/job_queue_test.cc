// JobQueue: jobs run in order on the queue's own threads, waiting jobs are bounded, and every
// job posted runs before the queue is gone.

#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <thread>
#include <vector>

#include "server/util/job_queue.h"

namespace graphstore {
namespace {

TEST_CASE("a job queue runs its jobs in order, on its own thread, all of them before it is gone", "[util]") {
  std::vector<int> order;
  std::atomic<int> on_caller{0};
  const auto caller = std::this_thread::get_id();
  {
    JobQueue queue(1, 1000);
    for (int i = 0; i < 100; ++i) {
      REQUIRE(queue.Post([&, i] {
        order.push_back(i);
        if (std::this_thread::get_id() == caller) on_caller.fetch_add(1);
      }));
    }
  }
  REQUIRE(order.size() == 100);
  for (int i = 0; i < 100; ++i) CHECK(order[i] == i);
  CHECK(on_caller.load() == 0);
}

TEST_CASE("a job queue refuses a job past its waiting limit and takes jobs again once they run", "[util]") {
  std::promise<void> started, release;
  std::shared_future<void> gate = release.get_future().share();
  std::atomic<int> ran{0};
  JobQueue queue(1, 2);
  REQUIRE(queue.Post([&] {
    started.set_value();
    gate.wait();
    ran.fetch_add(1);
  }));
  started.get_future().wait();  // the only thread is busy: what follows waits
  CHECK(queue.Post([&] { ran.fetch_add(1); }));
  CHECK(queue.Post([&] { ran.fetch_add(1); }));
  CHECK(queue.pending() == 3);
  CHECK_FALSE(queue.Post([&] { ran.fetch_add(100); }));
  release.set_value();
  // Once the waiting jobs have run, there is room again.
  std::promise<void> last;
  while (!queue.Post([&] { last.set_value(); })) std::this_thread::yield();
  last.get_future().wait();
  CHECK(ran.load() == 3);
}

TEST_CASE("a job queue's threads share its jobs", "[util]") {
  // Two jobs that each wait for the other to start can only both finish on two threads.
  std::promise<void> a_started, b_started;
  std::shared_future<void> a = a_started.get_future().share(), b = b_started.get_future().share();
  std::atomic<int> done{0};
  {
    JobQueue queue(2, 10);
    REQUIRE(queue.Post([&] {
      a_started.set_value();
      b.wait();
      done.fetch_add(1);
    }));
    REQUIRE(queue.Post([&] {
      b_started.set_value();
      a.wait();
      done.fetch_add(1);
    }));
  }
  CHECK(done.load() == 2);
}

}  // namespace
}  // namespace graphstore
