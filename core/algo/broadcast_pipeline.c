/* core/algo/broadcast_pipeline.c - the segment loop under both broadcasts (broadcast_tree.c,
 * broadcast_ring.c): they differ only in the shape of the tree the data flows down.
 *
 * Ranks are renumbered relative to the root (v = rank - root mod n). Each rank receives segment k
 * from its parent (all posted up front, straight into the buffer), then sends it to every child,
 * so a segment leaves as soon as it has arrived. Message step = segment number, marked as only
 * copied (TETHER__STEP_COPY). */
#include "core/algo/algo.h"
#include "core/batch.h"

int tether__bcast_rank(const tether_group *g, const tether__coll *c, int v)
{
    return tether__mod(v + c->root, g->size);
}

/* Queue segment k to every child. */
static int send_segment(tether__batch *b, const tether__coll *c, const tether__bcast_shape *t,
                        size_t nseg, size_t k, tether__req **sends)
{
    size_t off, len, es = c->esize;
    tether__part(c->count, nseg, k, &off, &len);
    for (int i = 0; i < t->nchildren; i++)
        TRY(tether__batch_send(b, t->children[i], tether__at(c->recv, off * es), len * es,
                               (uint32_t)k | TETHER__STEP_COPY, &sends[(size_t)i * nseg + k]));
    return TETHER_OK;
}

/* The data flows from the root only: a receiver checks its parent's signature on every segment,
 * and a rank that disagrees with no receiver of its messages learns of it at the next collective
 * (the signature chain, core/coll.c). Forwarders pass on each segment as it comes, since it
 * matched their parent's signature. */
static int run(tether_group *g, const tether__coll *c, const tether__bcast_shape *t, size_t nseg,
               tether__req **recvs, tether__req **sends)
{
    size_t es = c->esize;
    tether__batch b;
    tether__batch_init(&b, g);
    for (size_t k = 0; k < nseg && t->parent >= 0; k++) {
        size_t off, len;
        tether__part(c->count, nseg, k, &off, &len);
        TRY(tether__batch_recv(&b, t->parent, tether__at(c->recv, off * es), len * es,
                               (uint32_t)k | TETHER__STEP_COPY, &recvs[k]));
    }
    for (size_t k = 0; k < nseg && t->parent < 0; k++)
        TRY(send_segment(&b, c, t, nseg, k, sends));
    TRY(tether__batch_post(&b));
    for (size_t k = 0; k < nseg && t->parent >= 0; k++) {
        TRY(tether__waitall(g, &recvs[k], 1));
        TRY(send_segment(&b, c, t, nseg, k, sends));
        TRY(tether__batch_post(&b));
    }
    return tether__waitall(g, sends, t->nchildren * (int)nseg);
}

int tether__bcast_pipeline(tether_group *g, const tether__coll *c, const tether__bcast_shape *t,
                           size_t nseg)
{
    tether__req_local local;
    size_t nsends = nseg * (size_t)t->nchildren;
    tether__req **recvs = tether__req_slots(g, &local, nseg + nsends, "broadcast requests");
    if (!recvs)
        return TETHER_ENOMEM;
    int rc = tether__algo_abort(g, run(g, c, t, nseg, recvs, recvs + nseg));
    tether__req_slots_free(g, recvs, &local);
    return rc;
}
