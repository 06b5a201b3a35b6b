// A fixed pool of worker threads that runs one batch of indexed tasks at a time.
#ifndef TENSAT_DETAIL_THREAD_POOL_H
#define TENSAT_DETAIL_THREAD_POOL_H

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tensat {
inline namespace v0 {
namespace detail {

/// `threads - 1` workers plus the calling thread. `run(n, task)` calls `task(k)` once for every
/// k in [0, n), in increasing order of k taken by whichever thread is free, and returns when all
/// calls are done. If tasks throw, the exception of the smallest such k is rethrown (the others
/// are dropped), so what a caller sees does not depend on the thread count or on timing.
/// One batch at a time: `run` is not reentrant and is called from one thread; at most 2^32
/// tasks a batch.
class ThreadPool {
 public:
  explicit ThreadPool(std::size_t threads) {
    for (std::size_t t = 1; t < threads; ++t) workers_.emplace_back([this] { work(); });
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& worker : workers_) worker.join();
  }

  /// Threads that run tasks, the caller's included.
  [[nodiscard]] std::size_t size() const noexcept { return workers_.size() + 1; }

  void run(std::size_t n, const std::function<void(std::size_t)>& task) {
    if (n == 0) return;
    std::uint64_t batch;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      batch = batch_.load(std::memory_order_relaxed) + 1;
      task_ = &task;
      count_ = n;
      done_count_.store(0, std::memory_order_relaxed);
      error_ = nullptr;
      error_at_ = n;
      next_.store(batch << 32, std::memory_order_release);
      batch_.store(batch, std::memory_order_release);
    }
    wake_.notify_all();
    take_tasks(batch, task, n);
    // Tasks a worker took may still run: spin briefly (they are usually short), then sleep.
    for (int spin = 0; spin < 2000 && done_count_.load(std::memory_order_acquire) < n; ++spin)
      std::this_thread::yield();
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return done_count_.load(std::memory_order_acquire) == n; });
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void work() {
    std::uint64_t seen = 0;
    while (true) {
      // Waiting a little awake first: a sleeping thread woken by the caller tends to be run on
      // the caller's core and to take its turn rather than run beside it.
      const auto until = std::chrono::steady_clock::now() + kAwake;
      while (batch_.load(std::memory_order_acquire) == seen &&
             std::chrono::steady_clock::now() < until)
        std::this_thread::yield();
      const std::function<void(std::size_t)>* task = nullptr;
      std::size_t n = 0;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || batch_.load(std::memory_order_relaxed) != seen; });
        if (stop_) return;
        seen = batch_.load(std::memory_order_relaxed);
        task = task_;
        n = count_;
      }
      take_tasks(seen, *task, n);
    }
  }

  /// How long a worker stays awake for the next batch (the runner's next iteration usually
  /// comes within it).
  static constexpr std::chrono::milliseconds kAwake{2};

  /// Claims and runs tasks of batch `batch` until none is left. A worker that wakes after its
  /// batch ended finds the batch number moved on and claims nothing (the caller does not wait
  /// for idle workers, only for the tasks).
  void take_tasks(std::uint64_t batch, const std::function<void(std::size_t)>& task,
                  std::size_t n) {
    while (true) {
      std::uint64_t claim = next_.load(std::memory_order_acquire);
      do {
        if ((claim >> 32) != batch || (claim & 0xffffffffu) >= n) return;
      } while (!next_.compare_exchange_weak(claim, claim + 1, std::memory_order_acq_rel));
      const std::size_t k = static_cast<std::size_t>(claim & 0xffffffffu);
      try {
        task(k);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (k < error_at_) {
          error_at_ = k;
          error_ = std::current_exception();
        }
      }
      if (done_count_.fetch_add(1, std::memory_order_acq_rel) + 1 == n) {
        std::lock_guard<std::mutex> lock(mutex_);  // the caller may be about to sleep
        done_.notify_one();
      }
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(std::size_t)>* task_ = nullptr;
  std::size_t count_ = 0;
  std::atomic<std::uint64_t> next_{0};  // batch number << 32 | next task index
  std::atomic<std::size_t> done_count_{0};
  std::atomic<std::uint64_t> batch_{0};  // bumped (under the mutex) to start a batch
  bool stop_ = false;
  std::exception_ptr error_;
  std::size_t error_at_ = 0;
};

}  // namespace detail
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_DETAIL_THREAD_POOL_H
