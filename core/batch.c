/* core/batch.c - the messages of a collective's step posted together (batch.h says why). */
#include "batch.h"

void tether__batch_init(tether__batch *b, tether_group *g)
{
    b->g = g;
    b->n = 0;
}

int tether__batch_post(tether__batch *b)
{
    tether__world *w = b->g->world;
    tether__req *reqs[TETHER__BATCH_MAX];
    int n = b->n, rc = TETHER_OK;
    b->n = 0;
    if (w->ops->post) {
        rc = w->ops->post(w->ep, b->post, n, reqs);
    } else { /* one by one, stopping at the first error as post() does */
        for (int i = 0; i < n; i++)
            reqs[i] = NULL;
        for (int i = 0; i < n && rc == TETHER_OK; i++) {
            const tether__post *p = &b->post[i];
            rc = p->is_send ? w->ops->isend(w->ep, p->peer, p->buf, p->len, p->tag, &reqs[i])
                            : w->ops->irecv(w->ep, p->peer, p->buf, p->len, p->tag, &reqs[i]);
        }
    }
    for (int i = 0; i < n; i++)
        *b->slot[i] = reqs[i];
    return rc;
}

static int add(tether__batch *b, int peer, int is_send, void *buf, size_t bytes, uint32_t step,
               tether__req **slot)
{
    if (b->n == TETHER__BATCH_MAX)
        TRY(tether__batch_post(b));
    tether_group *g = b->g;
    b->post[b->n] = (tether__post){.peer = g->world_ranks[peer],
                                   .is_send = is_send,
                                   .buf = buf,
                                   .len = bytes,
                                   .tag = tether__tag_of(g, step)};
    b->slot[b->n++] = slot;
    return TETHER_OK;
}

int tether__batch_send(tether__batch *b, int peer, const void *buf, size_t bytes, uint32_t step,
                       tether__req **slot)
{
    return add(b, peer, 1, (void *)buf, bytes, step, slot);
}

int tether__batch_recv(tether__batch *b, int peer, void *buf, size_t bytes, uint32_t step,
                       tether__req **slot)
{
    return add(b, peer, 0, buf, bytes, step, slot);
}
