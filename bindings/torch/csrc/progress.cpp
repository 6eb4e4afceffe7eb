/* bindings/torch/csrc/progress.cpp - the per-process-group task thread (see progress.h). */
#include "progress.h"

#include <algorithm>
#include <utility>

#include <Python.h>

#include "tether.h"

namespace tether_torch
{

namespace
{

/* Releases the GIL for its lifetime when this thread holds it (a group dropped from Python), and
 * does nothing otherwise (dropped from a C++ thread, or after the interpreter finalised). */
class NoGil
{
  public:
    NoGil() : state_(Py_IsInitialized() && PyGILState_Check() ? PyEval_SaveThread() : nullptr) {}
    ~NoGil()
    {
        if (state_)
            PyEval_RestoreThread(state_);
    }
    NoGil(const NoGil &) = delete;
    NoGil &operator=(const NoGil &) = delete;

  private:
    PyThreadState *state_;
};

} // namespace

ProgressThread::ProgressThread() : thread_([this] { run(); }) {}

ProgressThread::~ProgressThread()
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    ready_.notify_one();
    {
        /* A task may end in a Python callback (a future's then()) that needs the GIL. */
        NoGil nogil;
        thread_.join();
    }
    finished_.clear(); /* here, with the GIL held again if the caller held it */
}

void ProgressThread::post(std::function<void()> task)
{
    std::vector<std::function<void()>> done;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        tasks_.push_back(std::move(task));
        done.swap(finished_);
    }
    ready_.notify_one();
    /* done is dropped here, outside the lock, on the caller's thread. */
}

void ProgressThread::watch(tether_request *req, std::function<void(int)> done)
{
    watched_.push_back({req, std::move(done)});
}

void ProgressThread::retire(std::function<void()> task)
{
    std::lock_guard<std::mutex> lock(mutex_);
    finished_.push_back(std::move(task));
}

bool ProgressThread::progress_watched(int timeout_ms)
{
    std::vector<tether_request *> reqs;
    for (const auto &w : watched_)
        reqs.push_back(w.req);
    std::vector<int> rcs(reqs.size(), TETHER_OK);
    if (timeout_ms < 0) { /* each to its end: tether_wait gives up after TETHER_TIMEOUT */
        for (size_t i = 0; i < reqs.size(); i++)
            rcs[i] = tether_wait(std::exchange(reqs[i], nullptr));
    } else {
        /* An entry set to NULL ended: successfully unless the call failed (then the group is
         * broken, and the error is every ended request's). */
        const int rc =
            tether_waitsome(reqs.data(), static_cast<int>(reqs.size()), timeout_ms, nullptr);
        std::fill(rcs.begin(), rcs.end(), rc);
    }
    std::vector<Watched> still;
    bool any = false;
    for (size_t i = 0; i < reqs.size(); i++) {
        if (reqs[i]) {
            still.push_back(std::move(watched_[i]));
            continue;
        }
        any = true;
        auto done = std::move(watched_[i].done);
        done(rcs[i]);
        retire([d = std::move(done)] {}); /* its tensors are dropped on a caller's thread */
    }
    watched_ = std::move(still);
    return any;
}

void ProgressThread::run()
{
    int slice_ms = 1;
    for (;;) {
        std::function<void()> task;
        bool stopping;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            /* No deadline here on purpose: an idle group may wait for its next call for hours. */
            if (watched_.empty())
                ready_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
            stopping = stopping_;
            if (!tasks_.empty()) {
                task = std::move(tasks_.front());
                tasks_.pop_front();
            } else if (stopping && watched_.empty()) {
                return; /* everything posted has run */
            }
        }
        if (task) {
            task();
            retire(std::move(task));
            if (!watched_.empty() && progress_watched(0))
                slice_ms = 1;
            continue;
        }
        if (progress_watched(stopping ? -1 : slice_ms))
            slice_ms = 1;
        else
            slice_ms = std::min(2 * slice_ms, 20);
    }
}

} // namespace tether_torch
