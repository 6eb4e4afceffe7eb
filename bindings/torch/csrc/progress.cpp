/* bindings/torch/csrc/progress.cpp - the per-process-group task thread (see progress.h). */
#include "progress.h"

#include <utility>

namespace tether_torch
{

ProgressThread::ProgressThread() : thread_([this] { run(); }) {}

ProgressThread::~ProgressThread()
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    ready_.notify_one();
    thread_.join();
}

void ProgressThread::post(std::function<void()> task)
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        tasks_.push_back(std::move(task));
    }
    ready_.notify_one();
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
    }
}

} // namespace tether_torch
