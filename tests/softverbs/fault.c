/* fault.c - what a real link does to frames, on demand: lose them (one chosen frame, at random, in
 * bursts), delay completions at random, and take a device down for a while.
 *
 * SOFTVERBS_DROP_NTH=n loses this process's nth data frame. SOFTVERBS_LOSS=p loses each data frame
 * with probability p; SOFTVERBS_LOSS_BURST=k makes each such loss take k frames in a row (the
 * lost one and the k - 1 after it), as a link that renegotiates does. An RC resend ends a burst:
 * it leaves a QP timeout (ms) after the loss, long after a burst of back-to-back frames, so a
 * burst costs each message it hits one resend, not all of them. Loss hits UC and RC alike: UC
 * never learns (the receiver resyncs to the next message), RC sees no answer and resends after the
 * QP's timeout up to retry_cnt times, as a NIC's transport does, so loss on RC costs time, not
 * data, unless one message is lost retry_cnt + 1 times (IBV_WC_RETRY_EXC_ERR, as on hardware).
 * SOFTVERBS_JITTER_US=j makes each completion visible up to j us later than it would be (uniform,
 * on top of SOFTVERBS_DELAY_US); completions of one CQ keep their order, as on hardware.
 * SOFTVERBS_DEVICE_DOWN="rdma_en1@2.5,rdma_en3#0@1-4" takes rdma_en1 down 2.5 s after this process
 * listed its devices, for good, and rank 0's rdma_en3 down from 1 s to 4 s: while down, its port
 * reports IBV_PORT_DOWN, every QP on it goes to the error state (the send at the head completes
 * with IBV_WC_RETRY_EXC_ERR, the rest and every posted RECV with IBV_WC_WR_FLUSH_ERR) and so does
 * each one brought up meanwhile; once back, new QPs work. A device name without "#rank" goes down
 * in every process. SOFTVERBS_DEVICE_SILENT takes the same list, and the device stops carrying
 * without a word, as a cable whose far end stopped listening: every frame sent from it and every
 * frame arriving on it is lost (an RC sender hears no answer: retries, then
 * IBV_WC_RETRY_EXC_ERR), while its port stays active and its QPs at RTS. Random choices come from
 * SOFTVERBS_SEED (mixed with the rank, so ranks differ);
 * unset, a seed is drawn and printed on stderr, so a failing run can be tried again with the same
 * draws (timing still decides which frame meets which draw).
 */
#include "softverbs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long drop_nth, data_frames;
static double loss;
static long burst, burst_left, jitter_us;
static uint64_t rng;
static uint64_t epoch_us; /* when the settings were read: device times count from here */

/* splitmix64: tiny, and every seed (0 included) gives a full-quality stream. */
static uint64_t next_random(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double uniform(void)
{
    return (double)(next_random() >> 11) / 9007199254740992.0;
}

/* A number in [min, max] from variable name, def when unset; EINVAL naming it when malformed. */
static int env_double(const char *name, double def, double min, double max, double *out)
{
    const char *v = getenv(name);
    char *end;
    if (!v || !*v) {
        *out = def;
        return 0;
    }
    errno = 0;
    *out = strtod(v, &end);
    if (errno || *end || !(*out >= min && *out <= max)) {
        softverbs__note("%s=\"%s\": expected a number in [%g, %g]", name, v, min, max);
        return EINVAL;
    }
    return 0;
}

/* One entry of SOFTVERBS_DEVICE_DOWN or, silent, SOFTVERBS_DEVICE_SILENT: "name[#rank]@from[-to]",
 * seconds. */
static int parse_window(const char *entry, size_t len, int silent)
{
    const char *var = silent ? "SOFTVERBS_DEVICE_SILENT" : "SOFTVERBS_DEVICE_DOWN";
    char buf[96], *at, *hash, *end;
    double from, to = 0;
    long rank = -1;
    sv_device *devs;
    int ndevs;
    if (len >= sizeof buf || !(at = memchr(entry, '@', len)))
        goto bad;
    memcpy(buf, entry, len);
    buf[len] = '\0';
    at = buf + (at - entry);
    *at = '\0';
    if ((hash = strchr(buf, '#'))) {
        *hash = '\0';
        rank = strtol(hash + 1, &end, 10);
        if (end == hash + 1 || *end || rank < 0)
            goto bad;
    }
    from = strtod(at + 1, &end);
    if (end == at + 1 || from < 0 || (*end && *end != '-'))
        goto bad;
    if (*end == '-' && ((to = strtod(end + 1, &end)) <= from || *end))
        goto bad;
    if (rank >= 0 && rank != softverbs__rank())
        return 0;
    devs = softverbs__device_list(&ndevs);
    for (int i = 0; i < ndevs; i++) {
        uint64_t *start = silent ? &devs[i].mute_at_us : &devs[i].down_at_us;
        uint64_t *stop = silent ? &devs[i].unmute_at_us : &devs[i].up_at_us;
        if (strcmp(devs[i].dev.name, buf))
            continue;
        *start = epoch_us + (uint64_t)(from * 1e6);
        *stop = to > 0 ? epoch_us + (uint64_t)(to * 1e6) : 0;
        return 0;
    }
    softverbs__note("%s: entry \"%.*s\": no device \"%s\" in SOFTVERBS_DEVICES", var, (int)len,
                    entry, buf);
    return EINVAL;
bad:
    softverbs__note("%s: entry \"%.*s\": expected name[#rank]@seconds[-seconds] (the second "
                    "later)",
                    var, (int)len, entry);
    return EINVAL;
}

/* Every entry of a SOFTVERBS_DEVICE_DOWN or _SILENT list (may be NULL). */
static int parse_windows(const char *list, int silent)
{
    while (list && *list) {
        size_t len = strcspn(list, ",");
        if (parse_window(list, len, silent))
            return EINVAL;
        list += len + (list[len] == ',');
    }
    return 0;
}

int softverbs__fault_load(void)
{
    int ndevs;
    sv_device *devs = softverbs__device_list(&ndevs);
    const char *seed = getenv("SOFTVERBS_SEED"), *down = getenv("SOFTVERBS_DEVICE_DOWN");
    unsigned long long s;
    char *end;
    epoch_us = softverbs__now_us();
    data_frames = 0;
    burst_left = 0;
    if (softverbs__env_long("SOFTVERBS_DROP_NTH", 0, 0, 1L << 40, &drop_nth) ||
        env_double("SOFTVERBS_LOSS", 0, 0, 1, &loss) ||
        softverbs__env_long("SOFTVERBS_LOSS_BURST", 1, 1, 1000000, &burst) ||
        softverbs__env_long("SOFTVERBS_JITTER_US", 0, 0, 10000000, &jitter_us))
        return EINVAL;
    if (seed && *seed) {
        errno = 0;
        s = strtoull(seed, &end, 10);
        if (errno || *end) {
            softverbs__note("SOFTVERBS_SEED=\"%s\": expected an unsigned integer", seed);
            return EINVAL;
        }
    } else {
        s = (unsigned long long)epoch_us ^ ((unsigned long long)getpid() << 32);
        if (loss > 0 || jitter_us > 0) /* only where chance decides anything */
            softverbs__note("SOFTVERBS_SEED=%llu (rank %ld; set it to draw the same again)", s,
                            softverbs__rank());
    }
    rng = (uint64_t)s ^ ((uint64_t)softverbs__rank() * 0xd1b54a32d192ed03ull);
    for (int i = 0; i < ndevs; i++)
        devs[i].down_at_us = devs[i].up_at_us = devs[i].mute_at_us = devs[i].unmute_at_us = 0;
    return parse_windows(down, 0) || parse_windows(getenv("SOFTVERBS_DEVICE_SILENT"), 1) ? EINVAL
                                                                                         : 0;
}

int softverbs__fault_drop(int resend)
{
    ++data_frames;
    if (resend)
        burst_left = 0;
    if (burst_left > 0) {
        burst_left--;
        return 1;
    }
    if ((drop_nth && data_frames == drop_nth) || (loss > 0 && uniform() < loss)) {
        burst_left = burst - 1;
        return 1;
    }
    return 0;
}

uint64_t softverbs__fault_jitter_us(void)
{
    return jitter_us ? next_random() % (uint64_t)(jitter_us + 1) : 0;
}

int softverbs__fault_dev_down(const sv_device *d, uint64_t now)
{
    return d->down_at_us && now >= d->down_at_us && (!d->up_at_us || now < d->up_at_us);
}

int softverbs__fault_dev_silent(const sv_device *d, uint64_t now)
{
    return d->mute_at_us && now >= d->mute_at_us && (!d->unmute_at_us || now < d->unmute_at_us);
}

/* Devices going down or up at their times: QPs on a down one fail. Returns the next such time. */
uint64_t softverbs__fault_tick(uint64_t now)
{
    int ndevs;
    sv_device *devs = softverbs__device_list(&ndevs);
    uint64_t due = 0;
    for (int i = 0; i < ndevs; i++) {
        sv_device *d = &devs[i];
        int down = softverbs__fault_dev_down(d, now);
        uint64_t next = !d->down_at_us ? 0 : now < d->down_at_us ? d->down_at_us : d->up_at_us;
        if (down != d->is_down)
            softverbs__note("device %s %s at %.2f s", d->dev.name, down ? "down" : "back up",
                            (double)(now - epoch_us) / 1e6);
        d->is_down = down;
        if (next > now)
            due = due && due < next ? due : next;
    }
    for (sv_qp *q = softverbs__qps; q; q = q->next)
        if (q->dev->is_down && (q->qp.state == IBV_QPS_RTR || q->qp.state == IBV_QPS_RTS))
            softverbs__qp_error(q, IBV_WC_RETRY_EXC_ERR);
    return due;
}
