// PiHardware: filled by its issue (GPIO, I2C, serial, PPS). The imports prove the C modules build.
internal import CGPIOD
internal import CI2C
internal import CLinuxShims

/// The version of the libgpiod this module runs with (`gpiod_version_string` in v1,
/// `gpiod_api_version` in v2).
public var libgpiodVersion: String {
    #if GNSSHAT_GPIOD_V2
    String(cString: gpiod_api_version())
    #else
    String(cString: gpiod_version_string())
    #endif
}

/// The `I2C_RDWR` ioctl request number from `<linux/i2c-dev.h>`.
public let i2cReadWriteRequest: UInt = UInt(I2C_RDWR)
