// libmosquitto's client API and its MQTT constants (reason codes, protocol versions). Swift calls all
// of it directly: nothing here but the includes.
#include <mosquitto.h>
#include <mqtt_protocol.h>
