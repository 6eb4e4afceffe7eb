/* bindings/torch/csrc/progress.cpp - the per-process-group task thread (see progress.h). */
#include "progress.h"

#include <utility>

#include <Python.h>

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

void ProgressThread::run()
{
    for (;;) {
        std::function<void()> task;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            /* No deadline here on purpose: an idle group may wait for its next call for hours. */
            ready_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
            if (tasks_.empty())
                return; /* stopping, and everything posted has run */
            task = std::move(tasks_.front());
            tasks_.pop_front();
        }
        task();
        std::lock_guard<std::mutex> lock(mutex_);
        finished_.push_back(std::move(task));
    }
}

} // namespace tether_torch
