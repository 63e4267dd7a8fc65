// SPDX-License-Identifier: GPL-2.0
/*
 * ubx_ddc_sim - a simulated u-blox receiver on I2C (DDC) for GNSSHat's hardware-in-loop rig.
 *
 * Registers an I2C adapter named "ubx-ddc-sim" that implements plain I2C transfers, so
 * i2c-dev's I2C_RDWR ioctl reaches it exactly as on a Raspberry Pi. One device answers,
 * at address 0x42 (parameter addr=); every other address is not acknowledged. The adapter
 * takes bus number bus= (the rig loads it as bus 1, a Pi's header bus) or the next free one.
 *
 * The device follows u-blox's DDC register model:
 *   - a write of one byte sets the current address (the register pointer);
 *   - a write of two or more bytes is a message to the receiver and is collected as its input;
 *   - reads start at the current address, which advances after each byte except at 0xFF;
 *   - 0xFD/0xFE hold the number of bytes waiting, big-endian (latched when 0xFD is read);
 *   - 0xFF is the data stream: the next waiting byte, or 0xFF when nothing waits.
 *
 * A simulator process in the guest plays the receiver through the misc device /dev/ubx-sim:
 * write(2) queues receiver output (what the host reads from 0xFF; a short count means the
 * buffer is full), read(2) returns the bytes the host wrote (blocking unless O_NONBLOCK),
 * poll(2) reports both. Faults and counters are sysfs attributes of that device,
 * /sys/class/misc/ubx-sim/:
 *   nak_next      not-acknowledge the next N transfers (the whole i2c_transfer fails)
 *   nak_errno     the error a NAK returns, also for unanswered addresses: 121 (EREMOTEIO, as
 *                 the Raspberry Pi's i2c-bcm2835 reports both) by default, or 6 (ENXIO, as
 *                 the kernel's fault codes suggest for an unanswered address)
 *   bogus_counts  queue of values the next count reads report instead of the real count:
 *                 decimal numbers (127, 32767, ...) or "bit15" (the real count | 0x8000);
 *                 writing appends, "clear" empties it
 *   ff_after      insert one 0xFF into the stream after N more real bytes (-1: none)
 *   stats         counters, one "name=value" pair per line
 *   reset         writing 1 empties both buffers, clears faults and counters, and restores
 *                 nak_errno
 */
#include <linux/fs.h>
#include <linux/i2c.h>
#include <linux/kernel.h>
#include <linux/kfifo.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/platform_device.h>
#include <linux/poll.h>
#include <linux/sched/signal.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#define DDC_ADAPTER_NAME "ubx-ddc-sim"
#define DDC_REG_COUNT_HIGH 0xFD
#define DDC_REG_COUNT_LOW 0xFE
#define DDC_REG_STREAM 0xFF
#define DDC_BOGUS_MAX 32
#define DDC_BOGUS_BIT15 (-1)
/* Both buffers hold 16 KiB, so a true count always fits in 15 bits (bit 15 only by fault). */
#define DDC_BUFFER_SIZE 16384

static unsigned short addr = 0x42;
module_param(addr, ushort, 0444);
MODULE_PARM_DESC(addr, "7-bit address of the simulated receiver");
static int bus = -1;
module_param(bus, int, 0444);
MODULE_PARM_DESC(bus, "I2C bus number of the adapter (/dev/i2c-N); -1 (default): the next free one");

struct ddc_sim {
	struct i2c_adapter adapter; /* registered while the platform driver is bound */
	struct miscdevice misc;
	struct platform_device *pdev;
	struct mutex lock; /* guards everything below */
	wait_queue_head_t host_wait;
	bool unplugged;      /* the adapter is going away: transfers fail with ENODEV */
	DECLARE_KFIFO(to_host, u8, DDC_BUFFER_SIZE);   /* receiver output: the 0xFF stream */
	DECLARE_KFIFO(from_host, u8, DDC_BUFFER_SIZE); /* host writes: receiver input */
	u8 reg;              /* current address */
	bool count_latched;  /* 0xFD was read in this transfer */
	u16 latched_count;
	/* faults */
	unsigned int nak_next;
	int nak_errno;
	int bogus[DDC_BOGUS_MAX];
	unsigned int bogus_len;
	long ff_after;
	/* counters */
	u64 transfers, messages, naks, absent, count_reads, stream_bytes, fill_bytes;
	u64 injected_ff, bogus_used, host_bytes, host_dropped, register_sets, unplugged_transfers;
};

static struct ddc_sim sim;

static u16 ddc_count(struct ddc_sim *s)
{
	u16 real = kfifo_len(&s->to_host);
	int bogus;

	s->count_reads++;
	if (s->bogus_len == 0)
		return real;
	bogus = s->bogus[0];
	s->bogus_len--;
	memmove(&s->bogus[0], &s->bogus[1], s->bogus_len * sizeof(s->bogus[0]));
	s->bogus_used++;
	return bogus == DDC_BOGUS_BIT15 ? (real | 0x8000) : (u16)bogus;
}

static u8 ddc_read_byte(struct ddc_sim *s)
{
	u8 byte;

	switch (s->reg) {
	case DDC_REG_COUNT_HIGH:
		s->latched_count = ddc_count(s);
		s->count_latched = true;
		s->reg = DDC_REG_COUNT_LOW;
		return s->latched_count >> 8;
	case DDC_REG_COUNT_LOW:
		if (!s->count_latched)
			s->latched_count = ddc_count(s);
		s->count_latched = false;
		s->reg = DDC_REG_STREAM;
		return s->latched_count & 0xFF;
	case DDC_REG_STREAM:
		/* An injected 0xFF lands between two real bytes: inside a frame, never in idle fill. */
		if (s->ff_after == 0 && !kfifo_is_empty(&s->to_host)) {
			s->ff_after = -1;
			s->injected_ff++;
			return 0xFF;
		}
		if (kfifo_get(&s->to_host, &byte)) {
			s->stream_bytes++;
			if (s->ff_after > 0)
				s->ff_after--;
			return byte;
		}
		s->fill_bytes++;
		return 0xFF;
	default:
		/* 0x00-0xFC are reserved on the receiver; they read as zero here. */
		s->reg++;
		return 0x00;
	}
}

static int ddc_xfer(struct i2c_adapter *adapter, struct i2c_msg *msgs, int num)
{
	struct ddc_sim *s = i2c_get_adapdata(adapter);
	int i, ret = num;
	bool wrote = false;

	mutex_lock(&s->lock);
	if (s->unplugged) {
		/* Not counted in `transfers`: nothing reached the bus. */
		s->unplugged_transfers++;
		ret = -ENODEV;
		goto out;
	}
	s->transfers++;
	s->count_latched = false;
	if (s->nak_next > 0) {
		s->nak_next--;
		s->naks++;
		ret = -s->nak_errno;
		goto out;
	}
	for (i = 0; i < num; i++) {
		struct i2c_msg *msg = &msgs[i];
		u16 j;

		if (msg->addr != addr || (msg->flags & I2C_M_TEN)) {
			s->absent++;
			ret = -s->nak_errno;
			goto out;
		}
		if (msg->flags & I2C_M_RECV_LEN) {
			ret = -EOPNOTSUPP;
			goto out;
		}
		s->messages++;
		if (msg->flags & I2C_M_RD) {
			for (j = 0; j < msg->len; j++)
				msg->buf[j] = ddc_read_byte(s);
		} else if (msg->len == 1) {
			s->reg = msg->buf[0];
			s->register_sets++;
		} else if (msg->len >= 2) {
			unsigned int stored = kfifo_in(&s->from_host, msg->buf, msg->len);

			s->host_bytes += stored;
			s->host_dropped += msg->len - stored;
			wrote = true;
		}
		/* a zero-length write is an address probe: acknowledged, nothing else */
	}
out:
	mutex_unlock(&s->lock);
	if (wrote)
		wake_up_interruptible(&s->host_wait);
	return ret;
}

static u32 ddc_functionality(struct i2c_adapter *adapter)
{
	return I2C_FUNC_I2C | I2C_FUNC_SMBUS_EMUL;
}

static const struct i2c_algorithm ddc_algorithm = {
	.master_xfer = ddc_xfer,
	.functionality = ddc_functionality,
};

/* read(2): the bytes the host wrote to the receiver. */
static ssize_t ddc_sim_read(struct file *file, char __user *buf, size_t count, loff_t *ppos)
{
	struct ddc_sim *s = &sim;
	unsigned int copied;
	int ret;

	if (count == 0)
		return 0;
	for (;;) {
		mutex_lock(&s->lock);
		if (!kfifo_is_empty(&s->from_host))
			break;
		mutex_unlock(&s->lock);
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		ret = wait_event_interruptible(s->host_wait, !kfifo_is_empty(&s->from_host));
		if (ret)
			return ret;
	}
	ret = kfifo_to_user(&s->from_host, buf, count, &copied);
	mutex_unlock(&s->lock);
	return ret ? ret : copied;
}

/* write(2): receiver output, queued for the host's reads of register 0xFF. */
static ssize_t ddc_sim_write(struct file *file, const char __user *buf, size_t count, loff_t *ppos)
{
	struct ddc_sim *s = &sim;
	unsigned int copied;
	int ret;

	if (count == 0)
		return 0;
	mutex_lock(&s->lock);
	ret = kfifo_from_user(&s->to_host, buf, count, &copied);
	mutex_unlock(&s->lock);
	if (ret)
		return ret;
	return copied ? copied : -ENOSPC;
}

static __poll_t ddc_sim_poll(struct file *file, poll_table *wait)
{
	struct ddc_sim *s = &sim;
	__poll_t mask = 0;

	poll_wait(file, &s->host_wait, wait);
	mutex_lock(&s->lock);
	if (!kfifo_is_empty(&s->from_host))
		mask |= EPOLLIN | EPOLLRDNORM;
	if (!kfifo_is_full(&s->to_host))
		mask |= EPOLLOUT | EPOLLWRNORM;
	mutex_unlock(&s->lock);
	return mask;
}

static const struct file_operations ddc_sim_fops = {
	.owner = THIS_MODULE,
	.read = ddc_sim_read,
	.write = ddc_sim_write,
	.poll = ddc_sim_poll,
	.llseek = noop_llseek,
};

static ssize_t nak_next_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	unsigned int n;

	mutex_lock(&sim.lock);
	n = sim.nak_next;
	mutex_unlock(&sim.lock);
	return sysfs_emit(buf, "%u\n", n);
}

static ssize_t nak_next_store(struct device *dev, struct device_attribute *attr,
			      const char *buf, size_t count)
{
	unsigned int n;
	int ret = kstrtouint(buf, 0, &n);

	if (ret)
		return ret;
	mutex_lock(&sim.lock);
	sim.nak_next = n;
	mutex_unlock(&sim.lock);
	return count;
}
static DEVICE_ATTR_RW(nak_next);

static ssize_t nak_errno_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	int value;

	mutex_lock(&sim.lock);
	value = sim.nak_errno;
	mutex_unlock(&sim.lock);
	return sysfs_emit(buf, "%d\n", value);
}

static ssize_t nak_errno_store(struct device *dev, struct device_attribute *attr,
			       const char *buf, size_t count)
{
	int value;
	int ret = kstrtoint(buf, 0, &value);

	if (ret)
		return ret;
	if (value != EREMOTEIO && value != ENXIO && value != EIO && value != ETIMEDOUT && value != EAGAIN)
		return -EINVAL;
	mutex_lock(&sim.lock);
	sim.nak_errno = value;
	mutex_unlock(&sim.lock);
	return count;
}
static DEVICE_ATTR_RW(nak_errno);

static ssize_t bogus_counts_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	ssize_t len = 0;
	unsigned int i;

	mutex_lock(&sim.lock);
	for (i = 0; i < sim.bogus_len; i++) {
		if (sim.bogus[i] == DDC_BOGUS_BIT15)
			len += sysfs_emit_at(buf, len, "%sbit15", i ? " " : "");
		else
			len += sysfs_emit_at(buf, len, "%s%d", i ? " " : "", sim.bogus[i]);
	}
	mutex_unlock(&sim.lock);
	len += sysfs_emit_at(buf, len, "\n");
	return len;
}

static ssize_t bogus_counts_store(struct device *dev, struct device_attribute *attr,
				  const char *buf, size_t count)
{
	char *text, *cursor, *token;
	int values[DDC_BOGUS_MAX];
	unsigned int n = 0, i;
	bool clear = false;
	int ret = 0;

	text = kstrndup(buf, count, GFP_KERNEL);
	if (!text)
		return -ENOMEM;
	cursor = text;
	while ((token = strsep(&cursor, " \t\n,")) != NULL) {
		unsigned int value;

		if (!*token)
			continue;
		if (!strcmp(token, "clear")) {
			clear = true;
			continue;
		}
		if (n == DDC_BOGUS_MAX) {
			ret = -ENOSPC;
			break;
		}
		if (!strcmp(token, "bit15")) {
			values[n++] = DDC_BOGUS_BIT15;
			continue;
		}
		ret = kstrtouint(token, 0, &value);
		if (ret)
			break;
		if (value > 0xFFFF) {
			ret = -ERANGE;
			break;
		}
		values[n++] = value;
	}
	kfree(text);
	if (ret)
		return ret;

	mutex_lock(&sim.lock);
	if (clear)
		sim.bogus_len = 0;
	if (sim.bogus_len + n > DDC_BOGUS_MAX) {
		ret = -ENOSPC;
	} else {
		for (i = 0; i < n; i++)
			sim.bogus[sim.bogus_len++] = values[i];
	}
	mutex_unlock(&sim.lock);
	return ret ? ret : count;
}
static DEVICE_ATTR_RW(bogus_counts);

static ssize_t ff_after_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	long n;

	mutex_lock(&sim.lock);
	n = sim.ff_after;
	mutex_unlock(&sim.lock);
	return sysfs_emit(buf, "%ld\n", n);
}

static ssize_t ff_after_store(struct device *dev, struct device_attribute *attr,
			      const char *buf, size_t count)
{
	long n;
	int ret = kstrtol(buf, 0, &n);

	if (ret)
		return ret;
	if (n < -1)
		return -EINVAL;
	mutex_lock(&sim.lock);
	sim.ff_after = n;
	mutex_unlock(&sim.lock);
	return count;
}
static DEVICE_ATTR_RW(ff_after);

static ssize_t stats_show(struct device *dev, struct device_attribute *attr, char *buf)
{
	ssize_t len;

	mutex_lock(&sim.lock);
	len = sysfs_emit(buf,
			 "transfers=%llu\nmessages=%llu\nnaks=%llu\nabsent=%llu\ncount_reads=%llu\n"
			 "stream_bytes=%llu\nfill_bytes=%llu\ninjected_ff=%llu\nbogus_used=%llu\n"
			 "register_sets=%llu\nhost_bytes=%llu\nhost_dropped=%llu\nunplugged=%llu\n"
			 "pending=%u\nhost_pending=%u\nregister=0x%02x\n",
			 sim.transfers, sim.messages, sim.naks, sim.absent, sim.count_reads,
			 sim.stream_bytes, sim.fill_bytes, sim.injected_ff, sim.bogus_used,
			 sim.register_sets, sim.host_bytes, sim.host_dropped, sim.unplugged_transfers,
			 kfifo_len(&sim.to_host), kfifo_len(&sim.from_host), sim.reg);
	mutex_unlock(&sim.lock);
	return len;
}
static DEVICE_ATTR_RO(stats);

static void ddc_reset_locked(struct ddc_sim *s)
{
	kfifo_reset(&s->to_host);
	kfifo_reset(&s->from_host);
	s->reg = DDC_REG_STREAM;
	s->count_latched = false;
	s->nak_next = 0;
	s->nak_errno = EREMOTEIO;
	s->bogus_len = 0;
	s->ff_after = -1;
	s->transfers = s->messages = s->naks = s->absent = s->count_reads = 0;
	s->stream_bytes = s->fill_bytes = s->injected_ff = s->bogus_used = 0;
	s->host_bytes = s->host_dropped = s->register_sets = s->unplugged_transfers = 0;
}

static ssize_t reset_store(struct device *dev, struct device_attribute *attr,
			   const char *buf, size_t count)
{
	bool yes;
	int ret = kstrtobool(buf, &yes);

	if (ret)
		return ret;
	if (yes) {
		mutex_lock(&sim.lock);
		ddc_reset_locked(&sim);
		mutex_unlock(&sim.lock);
	}
	return count;
}
static DEVICE_ATTR_WO(reset);

static struct attribute *ddc_sim_attrs[] = {
	&dev_attr_nak_next.attr,
	&dev_attr_nak_errno.attr,
	&dev_attr_bogus_counts.attr,
	&dev_attr_ff_after.attr,
	&dev_attr_stats.attr,
	&dev_attr_reset.attr,
	NULL,
};
ATTRIBUTE_GROUPS(ddc_sim);

/* The adapter comes with the platform driver's binding: at insmod, and at each bind. */
static int ddc_sim_probe(struct platform_device *pdev)
{
	struct ddc_sim *s = &sim;
	int ret;

	/* i2c_del_adapter() leaves the structure to be filled again. */
	memset(&s->adapter, 0, sizeof(s->adapter));
	s->adapter.owner = THIS_MODULE;
	s->adapter.algo = &ddc_algorithm;
	s->adapter.dev.parent = &pdev->dev;
	/* A fixed number lets a board file name the bus, as a Pi's board files say bus 1. */
	s->adapter.nr = bus < 0 ? -1 : bus;
	strscpy(s->adapter.name, DDC_ADAPTER_NAME, sizeof(s->adapter.name));
	i2c_set_adapdata(&s->adapter, s);
	mutex_lock(&s->lock);
	s->unplugged = false;
	mutex_unlock(&s->lock);
	ret = i2c_add_numbered_adapter(&s->adapter);
	if (ret)
		return ret;
	platform_set_drvdata(pdev, s);
	dev_info(&pdev->dev, "u-blox DDC at 0x%02x on %s\n", addr, dev_name(&s->adapter.dev));
	return 0;
}

/* Unplugged first (transfers fail with ENODEV), then removed once nobody holds /dev/i2c-N open. */
static int ddc_sim_remove(struct platform_device *pdev)
{
	struct ddc_sim *s = platform_get_drvdata(pdev);

	mutex_lock(&s->lock);
	s->unplugged = true;
	mutex_unlock(&s->lock);
	i2c_del_adapter(&s->adapter);
	dev_info(&pdev->dev, "adapter removed\n");
	return 0;
}

static struct platform_driver ddc_sim_driver = {
	.probe = ddc_sim_probe,
	.remove = ddc_sim_remove,
	.driver = { .name = DDC_ADAPTER_NAME },
};

static int __init ddc_sim_init(void)
{
	int ret;

	if (addr < 0x08 || addr > 0x77)
		return -EINVAL;
	mutex_init(&sim.lock);
	init_waitqueue_head(&sim.host_wait);
	INIT_KFIFO(sim.to_host);
	INIT_KFIFO(sim.from_host);
	ddc_reset_locked(&sim);

	sim.misc.minor = MISC_DYNAMIC_MINOR;
	sim.misc.name = "ubx-sim";
	sim.misc.fops = &ddc_sim_fops;
	sim.misc.mode = 0666;
	sim.misc.groups = ddc_sim_groups;
	ret = misc_register(&sim.misc);
	if (ret)
		return ret;
	ret = platform_driver_register(&ddc_sim_driver);
	if (ret)
		goto out_misc;
	sim.pdev = platform_device_register_simple(DDC_ADAPTER_NAME, PLATFORM_DEVID_NONE, NULL, 0);
	if (IS_ERR(sim.pdev)) {
		ret = PTR_ERR(sim.pdev);
		goto out_driver;
	}
	if (!platform_get_drvdata(sim.pdev)) {
		/* the probe failed (the bus number is taken): leave nothing half made */
		ret = -EBUSY;
		goto out_device;
	}
	return 0;

out_device:
	platform_device_unregister(sim.pdev);
out_driver:
	platform_driver_unregister(&ddc_sim_driver);
out_misc:
	misc_deregister(&sim.misc);
	return ret;
}

static void __exit ddc_sim_exit(void)
{
	platform_device_unregister(sim.pdev);
	platform_driver_unregister(&ddc_sim_driver);
	misc_deregister(&sim.misc);
}

module_init(ddc_sim_init);
module_exit(ddc_sim_exit);

MODULE_DESCRIPTION("Simulated u-blox receiver on an I2C (DDC) adapter for GNSSHat's hardware-in-loop rig");
MODULE_LICENSE("GPL");
