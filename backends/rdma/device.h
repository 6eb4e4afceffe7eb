/* backends/rdma/device.h - a device: its context, protection domain, CQ and slot pool (device.c).
 */
#ifndef TETHER_RDMA_DEVICE_H
#define TETHER_RDMA_DEVICE_H

#include "rdma_impl.h"

int tether__rdma_dev_open(rdma_ep *ep, rdma_dev *d, struct ibv_device *dev);
/* The same on a context rdma_cm opened (cm.c), which stays rdma_cm's. */
int tether__rdma_dev_adopt(rdma_ep *ep, rdma_dev *d, struct ibv_context *ctx);
int tether__rdma_dev_pool(rdma_ep *ep, rdma_dev *d);
void tether__rdma_dev_close(rdma_ep *ep, rdma_dev *d);
/* Take and acknowledge every event waiting on the device's channel (it is non-blocking). */
void tether__rdma_dev_events(rdma_ep *ep, rdma_dev *d);
unsigned char *tether__rdma_slot(const rdma_link *l, int slot);

#endif
