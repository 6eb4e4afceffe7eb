/* bindings/torch/csrc/process_group.cpp - torch's collectives mapped onto tether calls.
 *
 * Words below: a call is what torch asked for ("allreduce"); its body is the lambda the progress
 * thread runs. Argument checks happen in the call, tensor data is only touched in the body, so a
 * tensor is read when its turn comes (DDP writes a bucket, then queues its all-reduce). Lists of
 * tensors are flattened into one buffer so they travel as one tether collective. */
#include "process_group.h"

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "args.h"
#include "sparse.h"
#include "staging.h"
#include "tether.h"
#include "work.h"

namespace tether_torch
{

namespace
{

std::string failure(const char *call, int rc)
{
    return std::string("tether ") + call + " failed: " + tether_err_name(rc) + " (" +
           tether_strerror(rc) + "): " + tether_last_error();
}

/* Runs fn on t's elements laid out contiguously, copying them back when t is not contiguous. */
int on_contiguous(const at::Tensor &t, const std::function<int(const at::Tensor &)> &fn)
{
    const at::Tensor c = t.contiguous();
    const int rc = fn(c);
    if (rc == TETHER_OK && !c.is_same(t))
        t.copy_(c);
    return rc;
}

/* The tensors' elements one after another, in one new 1-D tensor. */
at::Tensor flatten(const std::vector<at::Tensor> &ts)
{
    std::vector<at::Tensor> flat;
    flat.reserve(ts.size());
    for (const auto &t : ts)
        flat.push_back(t.reshape(-1));
    return at::cat(flat);
}

/* The reverse of flatten: flat's elements back into ts. */
void unflatten(const at::Tensor &flat, const std::vector<at::Tensor> &ts)
{
    int64_t offset = 0;
    for (const auto &t : ts) {
        t.copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
        offset += t.numel();
    }
}

/* Elements per destination rank of t cut along dim 0 by split sizes (empty: equal parts). */
std::vector<int64_t> block_sizes(const at::Tensor &t, const std::vector<int64_t> &splits, int size,
                                 const char *call)
{
    if (t.dim() == 0)
        bad_arg(call, "needs tensors with at least one dimension");
    const int64_t rows = t.size(0), row = rows ? t.numel() / rows : 0;
    if (splits.empty()) {
        if (rows % size)
            bad_arg(call, "dim 0 (" + std::to_string(rows) + ") does not divide into " +
                              std::to_string(size) + " equal parts; pass split sizes");
        return std::vector<int64_t>(size, rows / size * row);
    }
    if (splits.size() != static_cast<size_t>(size))
        bad_arg(call, "expected " + std::to_string(size) + " split sizes, got " +
                          std::to_string(splits.size()));
    std::vector<int64_t> blocks;
    int64_t total = 0;
    for (int64_t s : splits) {
        if (s < 0)
            bad_arg(call, "negative split size");
        total += s;
        blocks.push_back(s * row);
    }
    if (total != rows)
        bad_arg(call, "split sizes add up to " + std::to_string(total) + ", dim 0 is " +
                          std::to_string(rows));
    return blocks;
}

/* A root rank from torch's options (one tensor per call: rootTensor is 0). */
int checked_root(int64_t root, int64_t root_tensor, int size, const char *call)
{
    if (root < 0 || root >= size || root_tensor != 0)
        bad_arg(call,
                "root rank " + std::to_string(root) + " is not in 0.." + std::to_string(size - 1));
    return static_cast<int>(root);
}

/* A list of one tensor per rank, each like t, which torch passes as the only element of lists;
 * where the call takes none (gather and scatter off the root), lists must be empty. */
std::vector<at::Tensor> per_rank_list(const std::vector<std::vector<at::Tensor>> &lists,
                                      bool wanted, const at::Tensor &t, int size, const char *call)
{
    if (!wanted) {
        if (!lists.empty())
            bad_arg(call, "only the root rank passes a list of tensors");
        return {};
    }
    if (lists.size() != 1)
        bad_arg(call, "expected 1 list of tensors, got " + std::to_string(lists.size()));
    check_count(lists[0], size, call);
    for (const auto &x : lists[0])
        check_like(x, t, true, call);
    return lists[0];
}

/* All-gather in into a new buffer, then its blocks into outs (none: this rank keeps nothing). */
int gather_into(tether_group *g, const at::Tensor &in, const std::vector<at::Tensor> &outs,
                tether_dtype dt, int n)
{
    const at::Tensor src = in.contiguous();
    const at::Tensor gathered = at::empty({n * src.numel()}, src.options());
    const int rc = tether_all_gather(g, src.data_ptr(), gathered.data_ptr(), src.numel(), dt);
    if (rc == TETHER_OK && !outs.empty())
        unflatten(gathered, outs);
    return rc;
}

/* Runs the reduction fn into t laid out contiguously, then divides by n for AVG. */
int reduced(const at::Tensor &t, const Reduction &red, int n,
            const std::function<int(const at::Tensor &)> &fn)
{
    return on_contiguous(t, [&](const at::Tensor &c) {
        const int rc = fn(c);
        if (rc == TETHER_OK && red.average)
            c.div_(n);
        return rc;
    });
}

/* All-reduce t in place. */
int all_reduce_into(tether_group *g, const at::Tensor &t, tether_dtype dt, const Reduction &red,
                    int n)
{
    return reduced(t, red, n, [&](const at::Tensor &c) {
        return tether_all_reduce(g, c.data_ptr(), c.data_ptr(), c.numel(), dt, red.op);
    });
}

/* Reduce-scatter the contiguous src (size blocks) into out. */
int reduce_scatter_into(tether_group *g, const at::Tensor &src, const at::Tensor &out,
                        tether_dtype dt, const Reduction &red, int n)
{
    return reduced(out, red, n, [&](const at::Tensor &c) {
        return tether_reduce_scatter(g, src.data_ptr(), c.data_ptr(), c.numel(), dt, red.op);
    });
}

/* Runs fn (a tether status, or a throw); the error it ends in, or none. */
std::exception_ptr outcome(const char *call, const std::function<int()> &fn)
{
    try {
        const int rc = fn();
        if (rc != TETHER_OK)
            return std::make_exception_ptr(std::runtime_error(failure(call, rc)));
        return nullptr;
    } catch (...) {
        return std::current_exception();
    }
}

/* This process's tether world (the group tether_init formed), which subgroups are made from;
 * NULL while there is none. The mutex also keeps it alive while a subgroup is formed from it. */
std::mutex world_mutex;
tether_group *world_group = nullptr;

} // namespace

int ProcessGroupTether::world_rank()
{
    std::lock_guard<std::mutex> lock(world_mutex);
    return world_group ? tether_group_rank(world_group) : -1;
}

std::string ProcessGroupTether::world_backend()
{
    std::lock_guard<std::mutex> lock(world_mutex);
    return world_group ? tether_group_backend(world_group) : "";
}

ProcessGroupTether::ProcessGroupTether(int rank, int size, std::chrono::milliseconds timeout)
    : TetherBase(rank, size), timeout_(timeout)
{
    std::lock_guard<std::mutex> lock(world_mutex);
    if (world_group)
        throw std::runtime_error("tether init_process_group: this process already has a tether "
                                 "world; destroy it first (new_group makes subgroups of it)");
    /* Alone, nothing to connect to, whatever the environment says; in a job, missing
     * configuration is an error (strict), never a silent group of one. */
    const int rc = tether_init(size > 1 ? "any" : "singleton", 1, &group_);
    if (rc != TETHER_OK)
        throw std::runtime_error(failure("init_process_group", rc));
    if (tether_group_rank(group_) != rank || tether_group_size(group_) != size) {
        const std::string what = "tether init_process_group: torch says rank " +
                                 std::to_string(rank) + " of " + std::to_string(size) +
                                 ", tether formed rank " +
                                 std::to_string(tether_group_rank(group_)) + " of " +
                                 std::to_string(tether_group_size(group_)) +
                                 "; check that the rank and world size torchrun (or your launcher) "
                                 "gave this process match the rank tether launch gave it and "
                                 "the hostfile's ranks";
        tether_group_free(group_);
        throw std::runtime_error(what);
    }
    world_group = group_;
    progress_ = std::make_unique<ProgressThread>();
    init();
}

ProcessGroupTether::ProcessGroupTether(const std::vector<int> &world_ranks, int rank,
                                       std::chrono::milliseconds timeout)
    : TetherBase(rank, static_cast<int>(world_ranks.size())), timeout_(timeout)
{
    std::lock_guard<std::mutex> lock(world_mutex);
    if (!world_group)
        throw std::runtime_error("tether new_group: this process has no tether world to make a "
                                 "subgroup of; init_process_group(backend=\"tether\") first");
    if (rank < 0 || rank >= size_ || world_ranks[rank] != tether_group_rank(world_group))
        throw std::runtime_error("tether new_group: torch says rank " + std::to_string(rank) +
                                 " of the subgroup, which is not this process's world rank " +
                                 std::to_string(tether_group_rank(world_group)));
    const int rc = tether_group_create(world_group, world_ranks.data(), size_, &group_);
    if (rc != TETHER_OK)
        throw std::runtime_error(failure("new_group", rc));
    progress_ = std::make_unique<ProgressThread>();
    init();
}

ProcessGroupTether::~ProcessGroupTether()
{
    progress_.reset(); /* runs what is queued: the group must outlive its last call */
    std::lock_guard<std::mutex> lock(world_mutex);
    if (world_group == group_)
        world_group = nullptr; /* its subgroups keep the connections open */
    tether_group_free(group_);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTether::enqueue(c10d::OpType type, const char *call,
                                                           std::vector<at::Tensor> outputs,
                                                           std::shared_ptr<const Staging> staged,
                                                           Body body)
{
    calls_++;
    auto work = c10::make_intrusive<TetherWork>(rank_, type, call, std::move(outputs), timeout_);
    progress_->post([work, call, g = group_, staged = std::move(staged), body = std::move(body)] {
        work->complete(outcome(call, [&] {
            staged->ready();
            const int rc = body(g);
            if (rc == TETHER_OK)
                staged->finish();
            return rc;
        }));
    });
    return work;
}

/* The task posts the request and returns; the progress thread watches it, so later calls run
 * meanwhile. A non-contiguous tensor travels through a contiguous copy, kept until the end. */
c10::intrusive_ptr<c10d::Work> ProcessGroupTether::enqueue_p2p(c10d::OpType type, const char *call,
                                                               const at::Tensor &t, int peer,
                                                               int tag)
{
    const tether_dtype dt = dtype_of(t, call);
    const bool sending = type == c10d::OpType::SEND;
    const auto st = std::make_shared<Staging>();
    const at::Tensor h = sending ? st->in(t) : st->out(t);
    calls_++;
    auto work =
        c10::make_intrusive<TetherWork>(rank_, type, call, std::vector<at::Tensor>{t}, timeout_);
    /* a receive's sender, written by tether when it completes (peer may be TETHER_ANY_SOURCE) */
    auto source = std::make_shared<int>(peer);
    progress_->post([work, call, g = group_, progress = progress_.get(), st, h, dt, peer, tag,
                     sending, source] {
        at::Tensor buf;
        tether_request *req = nullptr;
        int blocking_rc = TETHER_OK; /* the call made in turn, not watched */
        std::exception_ptr error = outcome(call, [&] {
            st->ready();
            buf = h.contiguous();
            void *p = buf.data_ptr();
            int rc = sending
                         ? tether_isend(g, p, buf.numel(), dt, peer, tag, &req)
                         : tether_irecv_from(g, p, buf.numel(), dt, peer, tag, source.get(), &req);
            if (rc == TETHER_EUNAVAIL) { /* blocking only (mpi): in turn, tags not kept */
                blocking_rc = sending ? tether_send(g, p, buf.numel(), dt, peer)
                                      : tether_recv_from(g, p, buf.numel(), dt, peer, source.get());
                rc = TETHER_OK;
            }
            return rc;
        });
        if (error) {
            work->complete(error);
            return;
        }
        auto finish = [work, call, st, h, buf, source](int rc) {
            work->complete(outcome(call, [&] {
                if (rc == TETHER_OK) {
                    if (!buf.is_same(h))
                        h.copy_(buf);
                    st->finish();
                    work->set_source(*source);
                }
                return rc;
            }));
        };
        if (req)
            progress->watch(req, finish);
        else
            finish(blocking_rc);
    });
    return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTether::broadcast(std::vector<at::Tensor> &tensors,
                                                             const c10d::BroadcastOptions &opts)
{
    const char *call = "broadcast";
    const at::Tensor t = single(tensors, call);
    const tether_dtype dt = dtype_of(t, call);
    const int root = checked_root(opts.rootRank, opts.rootTensor, size_, call);
    const auto st = std::make_shared<Staging>();
    return enqueue(c10d::OpType::BROADCAST, call, {t}, st,
                   [h = st->inout(t), dt, root](tether_group *g) {
                       return on_contiguous(h, [&](const at::Tensor &c) {
                           return tether_broadcast(g, c.data_ptr(), c.numel(), dt, root);
                       });
                   });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTether::allreduce(std::vector<at::Tensor> &tensors,
                                                             const c10d::AllreduceOptions &opts)
{
    const char *call = "allreduce";
    if (tensors.size() == 1 && tensors[0].defined() && tensors[0].is_sparse())
        return sparse_allreduce(tensors[0], opts);
    const at::Tensor t = single(tensors, call);
    const tether_dtype dt = dtype_of(t, call);
    const Reduction red = reduction_of(opts.reduceOp, t, call);
    const int n = size_;
    const auto st = std::make_shared<Staging>();
    return enqueue(c10d::OpType::ALLREDUCE, call, {t}, st,
                   [h = st->inout(t), dt, red, n](tether_group *g) {
                       return all_reduce_into(g, h, dt, red, n);
                   });
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupTether::sparse_allreduce(const at::Tensor &t, const c10d::AllreduceOptions &opts)
{
    const char *call = "allreduce";
    if (!t.device().is_cpu())
        bad_arg(call,
                "sparse tensor on " + t.device().str() + ": tether sums sparse CPU tensors only");
    if (opts.reduceOp.op_ != c10d::ReduceOp::SUM)
        bad_arg(call, "sparse tensors are summed only (ReduceOp.SUM), as on gloo");
    const tether_dtype dt = dtype_of(t, call);
    const int n = size_;
    return enqueue(c10d::OpType::ALLREDUCE, call, {t}, std::make_shared<Staging>(),
                   [t, dt, n](tether_group *g) { return sparse_all_reduce_into(g, t, dt, n); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTether::reduce(std::vector<at::Tensor> &tensors,
                                                          const c10d::ReduceOptions &opts)
{
    const char *call = "reduce";
    const at::Tensor t = single(tensors, call);
    const tether_dtype dt = dtype_of(t, call);
    const Reduction red = reduction_of(opts.reduceOp, t, call);
    const bool root = checked_root(opts.rootRank, opts.rootTensor, size_, call) == rank_;
    const int n = size_;
    const auto st = std::make_shared<Staging>();
    const at::Tensor h = root ? st->inout(t) : st->in(t);
    return enqueue(c10d::OpType::REDUCE, call, {t}, st, [h, dt, red, n, root](tether_group *g) {
        if (!root) { /* its tensor stays as it was */
            const at::Tensor c = h.contiguous().clone();
            return tether_all_reduce(g, c.data_ptr(), c.data_ptr(), c.numel(), dt, red.op);
        }
        return all_reduce_into(g, h, dt, red, n);
    });
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupTether::gather(std::vector<std::vector<at::Tensor>> &outputs,
                           std::vector<at::Tensor> &inputs, const c10d::GatherOptions &opts)
{
    const char *call = "gather";
    const at::Tensor in = single(inputs, call);
    const tether_dtype dt = dtype_of(in, call);
    const bool root = checked_root(opts.rootRank, 0, size_, call) == rank_;
    const std::vector<at::Tensor> outs = per_rank_list(outputs, root, in, size_, call);
    const int n = size_;
    const auto st = std::make_shared<Staging>();
    return enqueue(c10d::OpType::GATHER, call, outs, st,
                   [in = st->in(in), outs = st->out(outs), dt, n](tether_group *g) {
                       return gather_into(g, in, outs, dt, n);
                   });
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupTether::scatter(std::vector<at::Tensor> &outputs,
                            std::vector<std::vector<at::Tensor>> &inputs,
                            const c10d::ScatterOptions &opts)
{
    const char *call = "scatter";
    const at::Tensor out = single(outputs, call);
    const tether_dtype dt = dtype_of(out, call);
    const int root = checked_root(opts.rootRank, 0, size_, call);
    const std::vector<at::Tensor> ins = per_rank_list(inputs, root == rank_, out, size_, call);
    const int n = size_, me = rank_;
    const auto st = std::make_shared<Staging>();
    return enqueue(c10d::OpType::SCATTER, call, {out}, st,
                   [out = st->out(out), ins = st->in(ins), dt, n, me, root](tether_group *g) {
                       const int64_t count = out.numel();
                       const at::Tensor all =
                           ins.empty() ? at::empty({n * count}, out.options()) : flatten(ins);
                       const int rc = tether_broadcast(g, all.data_ptr(), all.numel(), dt, root);
                       if (rc == TETHER_OK)
                           out.copy_(all.narrow(0, me * count, count).view(out.sizes()));
                       return rc;
                   });
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupTether::allreduce_coalesced(std::vector<at::Tensor> &tensors,
                                        const c10d::AllreduceCoalescedOptions &opts)
{
    const char *call = "allreduce_coalesced";
    const tether_dtype dt = check_list(tensors, false, call);
    const Reduction red = reduction_of(opts.reduceOp, tensors[0], call);
    const int n = size_;
    const auto st = std::make_shared<Staging>();
    return enqueue(c10d::OpType::ALLREDUCE_COALESCED, call, tensors, st,
                   [ts = st->inout(tensors), dt, red, n](tether_group *g) {
                       const at::Tensor flat = flatten(ts);
                       const int rc = tether_all_reduce(g, flat.data_ptr(), flat.data_ptr(),
                                                        flat.numel(), dt, red.op);
                       if (rc != TETHER_OK)
                           return rc;
                       if (red.average)
                           flat.div_(n);
                       unflatten(flat, ts);
                       return rc;
                   });
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupTether::allgather(std::vector<std::vector<at::Tensor>> &outputs,
                              std::vector<at::Tensor> &inputs, const c10d::AllgatherOptions &)
{
    const char *call = "allgather";
    const at::Tensor in = single(inputs, call);
    const tether_dtype dt = dtype_of(in, call);
    const std::vector<at::Tensor> outs = per_rank_list(outputs, true, in, size_, call);
    const int n = size_;
    const auto st = std::make_shared<Staging>();
    return enqueue(c10d::OpType::ALLGATHER, call, outs, st,
                   [in = st->in(in), outs = st->out(outs), dt, n](tether_group *g) {
                       return gather_into(g, in, outs, dt, n);
                   });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTether::_allgather_base(at::Tensor &output,
                                                                   at::Tensor &input,
                                                                   const c10d::AllgatherOptions &)
{
    const char *call = "all_gather_into_tensor";
    const tether_dtype dt = check_tensor(input, call);
    check_like(output, input, false, call);
    if (output.numel() != input.numel() * size_)
        bad_arg(call, "output has " + std::to_string(output.numel()) + " elements, expected " +
                          std::to_string(size_) + " x " + std::to_string(input.numel()));
    const auto st = std::make_shared<Staging>();
    return enqueue(c10d::OpType::_ALLGATHER_BASE, call, {output}, st,
                   [in = st->in(input), out = st->out(output), dt](tether_group *g) {
                       const at::Tensor src = in.contiguous();
                       return on_contiguous(out, [&](const at::Tensor &c) {
                           return tether_all_gather(g, src.data_ptr(), c.data_ptr(), src.numel(),
                                                    dt);
                       });
                   });
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupTether::allgather_coalesced(std::vector<std::vector<at::Tensor>> &output_lists,
                                        std::vector<at::Tensor> &inputs,
                                        const c10d::AllgatherOptions &)
{
    const char *call = "allgather_coalesced";
    const tether_dtype dt = check_list(inputs, false, call);
    if (output_lists.size() != static_cast<size_t>(size_))
        bad_arg(call, "expected " + std::to_string(size_) + " output lists (one per rank), got " +
                          std::to_string(output_lists.size()));
    std::vector<at::Tensor> all_outputs;
    for (const auto &list : output_lists) {
        check_count(list, inputs.size(), call);
        for (size_t j = 0; j < list.size(); j++)
            check_like(list[j], inputs[j], true, call);
        all_outputs.insert(all_outputs.end(), list.begin(), list.end());
    }
    const int n = size_;
    const auto st = std::make_shared<Staging>();
    std::vector<std::vector<at::Tensor>> lists;
    for (const auto &list : output_lists)
        lists.push_back(st->out(list));
    return enqueue(c10d::OpType::ALLGATHER_COALESCED, call, all_outputs, st,
                   [ins = st->in(inputs), lists, dt, n](tether_group *g) {
                       const at::Tensor flat = flatten(ins);
                       const int64_t count = flat.numel();
                       const at::Tensor gathered = at::empty({n * count}, flat.options());
                       const int rc =
                           tether_all_gather(g, flat.data_ptr(), gathered.data_ptr(), count, dt);
                       if (rc != TETHER_OK)
                           return rc;
                       for (int r = 0; r < n; r++)
                           unflatten(gathered.narrow(0, r * count, count), lists[r]);
                       return rc;
                   });
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupTether::reduce_scatter(std::vector<at::Tensor> &outputs,
                                   std::vector<std::vector<at::Tensor>> &inputs,
                                   const c10d::ReduceScatterOptions &opts)
{
    const char *call = "reduce_scatter";
    const at::Tensor out = single(outputs, call);
    const tether_dtype dt = dtype_of(out, call);
    const std::vector<at::Tensor> ins = per_rank_list(inputs, true, out, size_, call);
    const Reduction red = reduction_of(opts.reduceOp, out, call);
    const int n = size_;
    const auto st = std::make_shared<Staging>();
    return enqueue(c10d::OpType::REDUCE_SCATTER, call, {out}, st,
                   [out = st->out(out), ins = st->in(ins), dt, red, n](tether_group *g) {
                       return reduce_scatter_into(g, flatten(ins), out, dt, red, n);
                   });
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupTether::_reduce_scatter_base(at::Tensor &output, at::Tensor &input,
                                         const c10d::ReduceScatterOptions &opts)
{
    const char *call = "reduce_scatter_tensor";
    const tether_dtype dt = check_tensor(output, call);
    check_like(input, output, false, call);
    if (input.numel() != output.numel() * size_)
        bad_arg(call, "input has " + std::to_string(input.numel()) + " elements, expected " +
                          std::to_string(size_) + " x " + std::to_string(output.numel()));
    const Reduction red = reduction_of(opts.reduceOp, output, call);
    const int n = size_;
    const auto st = std::make_shared<Staging>();
    return enqueue(c10d::OpType::_REDUCE_SCATTER_BASE, call, {output}, st,
                   [in = st->in(input), out = st->out(output), dt, red, n](tether_group *g) {
                       return reduce_scatter_into(g, in.contiguous(), out, dt, red, n);
                   });
}

/* Every rank learns every block size, checks that what j sends to i is what i expects from j,
 * then pads each block to the largest so one all_to_all moves them all. */
int ProcessGroupTether::all_to_all_blocks(tether_group *g, const char *call,
                                          const std::vector<at::Tensor> &send,
                                          const std::vector<at::Tensor> &recv)
{
    const int n = size_;
    const tether_dtype dt = dtype_of(send[0], call);
    at::Tensor mine = at::empty({2 * n}, at::kLong); /* sent to j, then expected from j */
    auto counts = mine.accessor<int64_t, 1>();
    for (int j = 0; j < n; j++) {
        counts[j] = send[j].numel();
        counts[n + j] = recv[j].numel();
    }
    const at::Tensor all = at::empty({n * 2 * n}, at::kLong);
    int rc = tether_all_gather(g, mine.data_ptr(), all.data_ptr(), 2 * n, TETHER_INT64);
    if (rc != TETHER_OK)
        return rc;
    const auto sizes = all.accessor<int64_t, 1>();
    int64_t block = 0;
    for (int from = 0; from < n; from++)
        for (int to = 0; to < n; to++) {
            const int64_t sends = sizes[from * 2 * n + to], expects = sizes[to * 2 * n + n + from];
            if (sends != expects)
                throw std::runtime_error(std::string("tether ") + call + ": rank " +
                                         std::to_string(from) + " sends " + std::to_string(sends) +
                                         " elements to rank " + std::to_string(to) +
                                         ", which expects " + std::to_string(expects));
            block = std::max(block, sends);
        }
    const at::Tensor sendbuf = at::zeros({n * block}, send[0].options());
    const at::Tensor recvbuf = at::empty({n * block}, send[0].options());
    for (int j = 0; j < n; j++)
        sendbuf.narrow(0, j * block, send[j].numel()).copy_(send[j]);
    rc = tether_all_to_all(g, sendbuf.data_ptr(), recvbuf.data_ptr(), block, dt);
    if (rc != TETHER_OK)
        return rc;
    for (int i = 0; i < n; i++)
        recv[i].copy_(recvbuf.narrow(0, i * block, recv[i].numel()));
    return TETHER_OK;
}

c10::intrusive_ptr<c10d::Work>
ProcessGroupTether::alltoall_base(at::Tensor &output, at::Tensor &input,
                                  std::vector<int64_t> &output_splits,
                                  std::vector<int64_t> &input_splits, const c10d::AllToAllOptions &)
{
    const char *call = "alltoall_base";
    const tether_dtype dt = check_tensor(input, call);
    check_like(output, input, false, call);
    const std::vector<int64_t> in_blocks = block_sizes(input, input_splits, size_, call);
    const std::vector<int64_t> out_blocks = block_sizes(output, output_splits, size_, call);
    /* Torch's equal-split form: no split sizes on any rank, so no size exchange is needed. */
    const bool equal = input_splits.empty() && output_splits.empty();
    if (equal && in_blocks[0] != out_blocks[0])
        bad_arg(call, "input has " + std::to_string(input.numel()) + " elements, output " +
                          std::to_string(output.numel()) + "; equal splits need the same");
    const auto st = std::make_shared<Staging>();
    return enqueue(
        c10d::OpType::ALLTOALL_BASE, call, {output}, st,
        [this, in = st->in(input), out = st->out(output), in_blocks, out_blocks, equal, dt,
         call](tether_group *g) {
            const at::Tensor src = in.contiguous();
            return on_contiguous(out, [&](const at::Tensor &c) {
                if (equal)
                    return tether_all_to_all(g, src.data_ptr(), c.data_ptr(), in_blocks[0], dt);
                return all_to_all_blocks(g, call, src.reshape(-1).split_with_sizes(in_blocks),
                                         c.reshape(-1).split_with_sizes(out_blocks));
            });
        });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTether::alltoall(std::vector<at::Tensor> &outputs,
                                                            std::vector<at::Tensor> &inputs,
                                                            const c10d::AllToAllOptions &)
{
    const char *call = "alltoall";
    check_count(inputs, size_, call);
    check_count(outputs, size_, call);
    check_list(inputs, false, call);
    for (const auto &o : outputs)
        check_like(o, inputs[0], false, call);
    const auto st = std::make_shared<Staging>();
    return enqueue(c10d::OpType::ALLTOALL, call, outputs, st,
                   [this, ins = st->in(inputs), outs = st->out(outputs), call](tether_group *g) {
                       std::vector<at::Tensor> send, recv;
                       for (const auto &t : ins)
                           send.push_back(t.reshape(-1));
                       for (const auto &t : outs)
                           recv.push_back(at::empty({t.numel()}, t.options()));
                       const int rc = all_to_all_blocks(g, call, send, recv);
                       if (rc == TETHER_OK)
                           for (size_t i = 0; i < outs.size(); i++)
                               outs[i].copy_(recv[i].view(outs[i].sizes()));
                       return rc;
                   });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTether::send(std::vector<at::Tensor> &tensors, int dst,
                                                        int tag)
{
    const char *call = "send";
    const at::Tensor t = single(tensors, call);
    if (dst < 0 || dst >= size_ || dst == rank_)
        bad_arg(call, "destination rank " + std::to_string(dst) + " is not another rank of 0.." +
                          std::to_string(size_ - 1));
    if (tag < 0)
        bad_arg(call, "tag " + std::to_string(tag) + " is negative");
    return enqueue_p2p(c10d::OpType::SEND, call, t, dst, tag);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTether::recv(std::vector<at::Tensor> &tensors, int src,
                                                        int tag)
{
    const char *call = "recv";
    const at::Tensor t = single(tensors, call);
    if (src < 0 || src >= size_ || src == rank_)
        bad_arg(call, "source rank " + std::to_string(src) + " is not another rank of 0.." +
                          std::to_string(size_ - 1));
    if (tag < 0)
        bad_arg(call, "tag " + std::to_string(tag) + " is negative");
    return enqueue_p2p(c10d::OpType::RECV, call, t, src, tag);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTether::recvAnysource(std::vector<at::Tensor> &tensors,
                                                                 int tag)
{
    const char *call = "recvAnysource";
    const at::Tensor t = single(tensors, call);
    if (size_ < 2)
        bad_arg(call, "a group of size 1 has no other rank to receive from");
    if (tag < 0)
        bad_arg(call, "tag " + std::to_string(tag) + " is negative");
    return enqueue_p2p(c10d::OpType::RECVANYSOURCE, call, t, TETHER_ANY_SOURCE, tag);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTether::barrier(const c10d::BarrierOptions &)
{
    return enqueue(c10d::OpType::BARRIER, "barrier", {}, std::make_shared<Staging>(),
                   [](tether_group *g) { return tether_barrier(g); });
}

/* A request the monitored barrier gave up on (a rank that never came) cannot be taken back: it is
 * handed to the progress thread with the byte it writes into, and ends when that rank comes or the
 * group is destroyed. Waits until deadline for reqs; returns the indexes still pending. */
static std::vector<size_t> wait_until(ProgressThread *progress, std::vector<tether_request *> reqs,
                                      std::shared_ptr<std::vector<uint8_t>> bytes,
                                      std::chrono::steady_clock::time_point deadline)
{
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        int rc = tether_waitsome(reqs.data(), static_cast<int>(reqs.size()),
                                 static_cast<int>(std::max<int64_t>(left.count(), 0)), nullptr);
        if (rc != TETHER_OK)
            throw std::runtime_error(failure("monitored_barrier", rc));
        std::vector<size_t> pending;
        for (size_t i = 0; i < reqs.size(); i++)
            if (reqs[i])
                pending.push_back(i);
        if (pending.empty())
            return pending;
        if (left.count() <= 0) {
            for (size_t i : pending)
                progress->watch(reqs[i], [bytes](int) {});
            return pending;
        }
    }
}

void ProcessGroupTether::monitoredBarrier(const c10d::BarrierOptions &opts, bool wait_all)
{
    const auto timeout = opts.timeout == c10d::kUnsetTimeout ? timeout_ : opts.timeout;
    const int n = size_, me = rank_;
    auto work = enqueue(
        c10d::OpType::BARRIER, "monitored_barrier", {}, std::make_shared<Staging>(),
        [=, progress = progress_.get()](tether_group *g) {
            const auto deadline = std::chrono::steady_clock::now() + timeout;
            auto bytes = std::make_shared<std::vector<uint8_t>>(n, 0);
            std::vector<tether_request *> reqs;
            const int tag = kMonitoredBarrierTag;
            if (me == 0) { /* hear from everyone, name who did not come, then release them */
                for (int r = 1; r < n; r++) {
                    reqs.push_back(nullptr);
                    int rc = tether_irecv(g, &(*bytes)[r], 1, TETHER_UINT8, r, tag, &reqs.back());
                    if (rc != TETHER_OK)
                        return rc;
                }
                const std::vector<size_t> missing = wait_until(progress, reqs, bytes, deadline);
                if (!missing.empty() && timeout.count() <= 0)
                    throw std::runtime_error("Rank 0 timed out in monitoredBarrier after " +
                                             std::to_string(timeout.count()) + " ms");
                if (!missing.empty()) {
                    std::string ranks;
                    for (size_t i = 0; i < (wait_all ? missing.size() : 1); i++)
                        ranks += (i ? ", " : "") + std::to_string(missing[i] + 1);
                    throw std::runtime_error(
                        std::string(wait_all && missing.size() > 1 ? "Ranks " : "Rank ") + ranks +
                        " failed to pass monitoredBarrier in " + std::to_string(timeout.count()) +
                        " ms");
                }
                for (int r = 1; r < n; r++) {
                    tether_request *ack = nullptr;
                    int rc = tether_isend(g, &(*bytes)[0], 1, TETHER_UINT8, r, tag, &ack);
                    rc = rc == TETHER_OK ? tether_wait(ack) : rc;
                    if (rc != TETHER_OK)
                        return rc;
                }
                return TETHER_OK;
            }
            reqs.assign(2, nullptr);
            int rc = tether_isend(g, &(*bytes)[0], 1, TETHER_UINT8, 0, tag, &reqs[0]);
            if (rc == TETHER_OK)
                rc = tether_irecv(g, &(*bytes)[1], 1, TETHER_UINT8, 0, tag, &reqs[1]);
            if (rc != TETHER_OK)
                return rc;
            if (!wait_until(progress, reqs, bytes, deadline).empty())
                throw std::runtime_error(
                    "Rank " + std::to_string(me) +
                    " successfully reached monitoredBarrier, but received errors while waiting "
                    "for send/recv from rank 0 (no answer within " +
                    std::to_string(timeout.count()) + " ms)");
            return TETHER_OK;
        });
    work->wait(kWaitForever);
}

} // namespace tether_torch
