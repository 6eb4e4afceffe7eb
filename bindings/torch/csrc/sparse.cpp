/* bindings/torch/csrc/sparse.cpp - all-reduce of sparse COO tensors (see sparse.h). Three
 * all-gathers: the counts of non-zeros, then the indices and the values, each padded to the
 * largest count so they travel as fixed-size blocks. */
#include "sparse.h"

#include <algorithm>
#include <vector>

namespace tether_torch
{

namespace
{

/* All-gather block (the same shape on every rank) into a tensor of n such blocks. */
int gather_blocks(tether_group *g, const at::Tensor &block, tether_dtype dt, int n, at::Tensor &all)
{
    std::vector<int64_t> shape{n};
    shape.insert(shape.end(), block.sizes().begin(), block.sizes().end());
    all = at::empty(shape, block.options());
    return tether_all_gather(g, block.data_ptr(), all.data_ptr(), block.numel(), dt);
}

/* src's first rows (dimension d), the rest of a zero tensor of rows rows: a fixed-size block. */
at::Tensor padded(const at::Tensor &src, int64_t d, int64_t rows)
{
    std::vector<int64_t> shape(src.sizes().begin(), src.sizes().end());
    shape[d] = rows;
    at::Tensor out = at::zeros(shape, src.options());
    out.narrow(d, 0, src.size(d)).copy_(src);
    return out;
}

} // namespace

int sparse_all_reduce_into(tether_group *g, const at::Tensor &t, tether_dtype dt, int n)
{
    const at::Tensor mine = t.coalesce();
    int64_t nnz = mine._nnz();
    std::vector<int64_t> counts(n);
    int rc = tether_all_gather(g, &nnz, counts.data(), 1, TETHER_INT64);
    if (rc != TETHER_OK)
        return rc;
    const int64_t most = *std::max_element(counts.begin(), counts.end());
    at::Tensor indices, values;
    rc = gather_blocks(g, padded(mine._indices(), 1, most), TETHER_INT64, n, indices);
    if (rc == TETHER_OK)
        rc = gather_blocks(g, padded(mine._values(), 0, most), dt, n, values);
    if (rc != TETHER_OK)
        return rc;
    std::vector<at::Tensor> idx, val;
    for (int r = 0; r < n; r++) {
        idx.push_back(indices[r].narrow(1, 0, counts[r]));
        val.push_back(values[r].narrow(0, 0, counts[r]));
    }
    const at::Tensor sum =
        at::sparse_coo_tensor(at::cat(idx, 1), at::cat(val, 0), t.sizes(), t.options()).coalesce();
    t.copy_(sum);
    return TETHER_OK;
}

} // namespace tether_torch
