/* bindings/torch/csrc/sparse.h - all-reduce of sparse COO tensors, as gloo does it. */
#pragma once

#include <ATen/ATen.h>

#include "tether.h"

namespace tether_torch
{

/* Sums the sparse COO CPU tensor t of every rank of g (n ranks) into t, in place: each rank's
 * indices and values are all-gathered (padded to the largest count of non-zeros, which the ranks
 * all-gather first), added up as sparse tensors and coalesced. Every rank's t must have the same
 * sizes and dtype; their non-zeros may differ. Returns a tether status. */
int sparse_all_reduce_into(tether_group *g, const at::Tensor &t, tether_dtype dt, int n);

} // namespace tether_torch
