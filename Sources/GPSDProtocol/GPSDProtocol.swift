// GPSDProtocol: gpsd's JSON protocol (3.x, as gpsd 3.22 speaks it) without sockets: the TPV and SKY
// reports and the service's other objects written byte for byte as gpsd writes them, and the client's
// requests read. The gpsd server (GPSD) and the MQTT bridge both write their JSON with it; it does no I/O.
