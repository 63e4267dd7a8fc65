#ifndef GNSSHAT_CI2C_SHIM_H
#define GNSSHAT_CI2C_SHIM_H
// i2c-dev: the I2C_RDWR ioctl and its structs (struct i2c_msg, struct i2c_rdwr_ioctl_data).
// Only kernel headers: PiHardware does plain I2C transfers and no SMBus calls, so it neither
// calls nor links libi2c, and a binary needs no libi2c at run time.
#include <linux/types.h>
#include <linux/i2c.h>
#include <linux/i2c-dev.h>
#endif
