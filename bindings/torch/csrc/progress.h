/* bindings/torch/csrc/progress.h - one thread per process group that runs its collectives in order.
 *
 * A tether group is used by one thread at a time and its collectives must be called in the same
 * order on every rank, so each process group owns one of these: torch's calls post tasks and
 * return at once; the thread runs them first in, first out. It sleeps on a condition variable when
 * idle. Every task ends by itself: tether calls give up after TETHER_TIMEOUT, and after the first
 * failure the group answers every later call at once with the same error. */
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace tether_torch
{

class ProgressThread
{
  public:
    ProgressThread();
    /* Runs the tasks already posted, then joins the thread. */
    ~ProgressThread();
    ProgressThread(const ProgressThread &) = delete;
    ProgressThread &operator=(const ProgressThread &) = delete;

    /* Queue task after every task posted before it. A task must not throw. */
    void post(std::function<void()> task);

  private:
    void run();

    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<std::function<void()>> tasks_;
    bool stopping_ = false;
    std::thread thread_; /* last: starts once the members above exist */
};

} // namespace tether_torch
