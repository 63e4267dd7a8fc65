#ifndef GNSSHAT_CI2C_SHIM_H
#define GNSSHAT_CI2C_SHIM_H
// i2c-dev: the I2C_RDWR ioctl and its structs, plus libi2c's SMBus helpers (libi2c-dev).
#include <linux/types.h>
#include <linux/i2c.h>
#include <linux/i2c-dev.h>
#include <i2c/smbus.h>
#endif
