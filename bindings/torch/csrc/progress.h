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
 *
 * Point-to-point calls do not hold the queue: their task only posts a tether request and hands it
 * to watch(); the thread completes watched requests between tasks, and when the queue is empty
 * waits for them in short, growing slices (1 to 20 ms) so that a new call is taken up soon. So
 * no order of sends and receives that completes elsewhere can deadlock here.
 */
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

struct tether_request;

namespace tether_torch
{

class ProgressThread
{
  public:
    ProgressThread();
    /* Runs the tasks already posted, waits for the watched requests (each at most TETHER_TIMEOUT
     * without progress, after which tether breaks the group) and joins the thread with the GIL
     * released (when the caller holds it), then drops every task on the calling thread. */
    ~ProgressThread();
    ProgressThread(const ProgressThread &) = delete;
    ProgressThread &operator=(const ProgressThread &) = delete;

    /* Queue task after every task posted before it. A task must not throw. Also drops the tasks
     * run since the last post(), here on the caller's thread. */
    void post(std::function<void()> task);

    /* Progress thread only (from a task): when req ends, call done with TETHER_OK or the error
     * (after an error the group is broken and every other watched request ends with it too). */
    void watch(tether_request *req, std::function<void(int)> done);

  private:
    void run();
    /* Waits up to timeout_ms (0: test once; -1: until each ends) for watched requests; calls and
     * retires the done of those that ended. Returns whether any did. */
    bool progress_watched(int timeout_ms);
    void retire(std::function<void()> task);

    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<std::function<void()>> tasks_;
    std::vector<std::function<void()>> finished_;
    struct Watched {
        tether_request *req;
        std::function<void(int)> done;
    };
    std::vector<Watched> watched_; /* the thread's own: no lock */
    bool stopping_ = false;
    std::thread thread_; /* last: starts once the members above exist */
};

} // namespace tether_torch
