// GPSD: the gpsd JSON protocol (3.x, as gpsd 3.22 speaks it) over TCP and Unix sockets, for one
// source whose receiver is powered only while clients watch. See GPSDServer and GPSDSource; the JSON
// itself (reports, responses, requests) is GPSDProtocol's.
