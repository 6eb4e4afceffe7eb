/* bindings/torch/csrc/progress.h - one thread per process group that runs its collectives in order.
 *
 * A tether group is used by one thread at a time and its collectives must be called in the same
 * order on every rank, so each process group owns one of these: torch's calls post tasks and
 * return at once; the thread runs them first in, first out. It sleeps on a condition variable when
 * idle. Every task ends by itself: tether calls give up after TETHER_TIMEOUT, and after the first
 * failure the group answers every later call at once with the same error.
 *
 * The thread never drops a task: a task holds tensors, and dropping the last reference to a tensor
 * whose Python object is owned by C++ takes the GIL, which the thread must never wait for (the
 * Python thread destroying the group, or exiting, may hold it while it waits for this thread). Run
 * tasks are handed back and dropped by the next post() or by the destructor, on a caller's thread.
 */
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tether_torch
{

class ProgressThread
{
  public:
    ProgressThread();
    /* Runs the tasks already posted and joins the thread with the GIL released (when the caller
     * holds it), then drops every task on the calling thread. */
    ~ProgressThread();
    ProgressThread(const ProgressThread &) = delete;
    ProgressThread &operator=(const ProgressThread &) = delete;

    /* Queue task after every task posted before it. A task must not throw. Also drops the tasks
     * run since the last post(), here on the caller's thread. */
    void post(std::function<void()> task);

  private:
    void run();

    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<std::function<void()>> tasks_;
    std::vector<std::function<void()>> finished_;
    bool stopping_ = false;
    std::thread thread_; /* last: starts once the members above exist */
};

} // namespace tether_torch
