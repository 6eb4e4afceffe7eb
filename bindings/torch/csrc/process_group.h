/* bindings/torch/csrc/process_group.h - the "tether" torch.distributed backend: torch's collectives
 * on a tether group, run in order on the group's progress thread.
 *
 * Every call checks its arguments at once (raising ValueError naming the call), then queues the
 * work and returns a Work that completes when the thread has run it. Failures (a peer gone, a
 * timeout, a mismatch) reach torch through the Work: wait() raises, the future holds the error.
 * Calls torch offers that are not listed here raise "ProcessGroup tether does not support X". */
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compat.h"
#include "progress.h"

struct tether_group;

namespace tether_torch
{
class Staging;
}

namespace tether_torch
{

class ProcessGroupTether final : public TetherBase
{
  public:
    /* Forms the world with tether_init("any", strict): from TETHER_HOSTFILE (tether launch) or a
     * coordinator (torchrun); "singleton" when size is 1. rank and size must match tether's.
     * timeout bounds Work.wait() when no timeout is given. */
    ProcessGroupTether(int rank, int size, std::chrono::milliseconds timeout);
    /* A subgroup of this process's tether world (new_group): the world ranks listed, this process
     * being rank. Collective over the listed ranks only (tether_group_create). */
    ProcessGroupTether(const std::vector<int> &world_ranks, int rank,
                       std::chrono::milliseconds timeout);
    ~ProcessGroupTether() override;

    /* This process's rank in its tether world, -1 while it has none. */
    static int world_rank();
    /* tether_group_backend of that world, "" while it has none. */
    static std::string world_backend();

    const std::string getBackendName() const override
    {
        return "tether";
    }

    c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor> &tensors,
                                             const c10d::BroadcastOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor> &tensors,
                                             const c10d::AllreduceOptions &opts) override;
    /* reduce, gather and scatter run as the all-to-all-ranks collective that contains them
     * (all-reduce, all-gather, a broadcast of the root's list): one tether collective each, with
     * its mismatch checks, at the cost of results the other ranks do not keep. */
    c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor> &tensors,
                                          const c10d::ReduceOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>> &outputs,
                                          std::vector<at::Tensor> &inputs,
                                          const c10d::GatherOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor> &outputs,
                                           std::vector<std::vector<at::Tensor>> &inputs,
                                           const c10d::ScatterOptions &opts) override;
    /* DDP's bucket lists: flattened into one buffer, one all-reduce. */
    c10::intrusive_ptr<c10d::Work>
    allreduce_coalesced(std::vector<at::Tensor> &tensors,
                        const c10d::AllreduceCoalescedOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>> &outputs,
                                             std::vector<at::Tensor> &inputs,
                                             const c10d::AllgatherOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor &output, at::Tensor &input,
                                                   const c10d::AllgatherOptions &opts) override;
    c10::intrusive_ptr<c10d::Work>
    allgather_coalesced(std::vector<std::vector<at::Tensor>> &output_lists,
                        std::vector<at::Tensor> &inputs,
                        const c10d::AllgatherOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor> &outputs,
                                                  std::vector<std::vector<at::Tensor>> &inputs,
                                                  const c10d::ReduceScatterOptions &opts) override;
    c10::intrusive_ptr<c10d::Work>
    _reduce_scatter_base(at::Tensor &output, at::Tensor &input,
                         const c10d::ReduceScatterOptions &opts) override;
    /* Uneven split sizes are padded to the largest block so they travel as one all_to_all. */
    c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor &output, at::Tensor &input,
                                                 std::vector<int64_t> &output_splits,
                                                 std::vector<int64_t> &input_splits,
                                                 const c10d::AllToAllOptions &opts) override;
    c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor> &outputs,
                                            std::vector<at::Tensor> &inputs,
                                            const c10d::AllToAllOptions &opts) override;
    /* Tagged (tether_isend/irecv): messages of one tag between two ranks arrive in the order sent,
     * of different tags in any order. They do not wait in the queue behind each other. */
    c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor> &tensors, int dst,
                                        int tag) override;
    c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor> &tensors, int src,
                                        int tag) override;
    /* The next message of tag from whichever rank sent one (TETHER_ANY_SOURCE); the Work's
     * sourceRank() names it. */
    c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor> &tensors,
                                                 int tag) override;
    c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions &opts) override;
    /* As gloo's: every rank reports to rank 0 within opts.timeout, which names the ranks that did
     * not ("Rank 1 failed to pass monitoredBarrier in 2000 ms"; every such rank with wait_all),
     * then releases the others. Tagged point to point with tag kMonitoredBarrierTag, reserved. */
    void monitoredBarrier(const c10d::BarrierOptions &opts, bool wait_all) override;

    static constexpr int kMonitoredBarrierTag = 2147483647;

    /* The calls issued on this group, for torch's ProcessGroupWrapper
     * (TORCH_DISTRIBUTED_DEBUG=DETAIL), which compares them across ranks. Every rank starts at 0.
     */
    void setSequenceNumberForGroup() override
    {
        calls_ = 0;
    }
    uint64_t getSequenceNumberForGroup() override
    {
        return calls_;
    }

  private:
    /* A queued call: runs on the progress thread, returns a tether status or throws. */
    using Body = std::function<int(tether_group *)>;

    /* staged: the host twins of the call's device tensors (staging.h); body runs on them. */
    c10::intrusive_ptr<c10d::Work> enqueue(c10d::OpType type, const char *call,
                                           std::vector<at::Tensor> outputs,
                                           std::shared_ptr<const Staging> staged, Body body);
    /* A send (type SEND) or receive of t with peer (a receive: or TETHER_ANY_SOURCE), watched by
     * the progress thread. */
    c10::intrusive_ptr<c10d::Work> enqueue_p2p(c10d::OpType type, const char *call,
                                               const at::Tensor &t, int peer, int tag);
    /* allreduce of one sparse COO CPU tensor: SUM only (sparse.h). */
    c10::intrusive_ptr<c10d::Work> sparse_allreduce(const at::Tensor &t,
                                                    const c10d::AllreduceOptions &opts);
    /* all_to_all with a block size per peer (elements), any of them 0. */
    int all_to_all_blocks(tether_group *g, const char *call, const std::vector<at::Tensor> &send,
                          const std::vector<at::Tensor> &recv);

    tether_group *group_ = nullptr;
    std::chrono::milliseconds timeout_;
    std::unique_ptr<ProgressThread> progress_;
    std::atomic<uint64_t> calls_{0};
};

} // namespace tether_torch
