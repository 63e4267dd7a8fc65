#ifndef GNSSHAT_CI2C_SHIM_H
#define GNSSHAT_CI2C_SHIM_H
// i2c-dev: the I2C_RDWR ioctl and its structs (struct i2c_msg, struct i2c_rdwr_ioctl_data), and
// libi2c's SMBus helpers (libi2c-dev): PiHardware probes an address with i2c_smbus_write_quick,
// as i2cdetect does, before it talks u-blox DDC over plain I2C transfers.
#include <linux/types.h>
#include <linux/i2c.h>
#include <linux/i2c-dev.h>
#include <i2c/smbus.h>
#endif
