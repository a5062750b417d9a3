// Where the capture takes packets: the directions and XDP attach modes the
// user chooses, and trace mode's hook points. Shared by every room, so that
// the programs never need the command line's types.
#pragma once

namespace xdpcap {

enum class XdpMode { Auto, Native, Generic };
// tcpdump's -Q: received frames (XDP), sent frames (TC egress), or both.
enum class Direction { In, Out, InOut };

const char* xdp_mode_name(XdpMode mode);
const char* direction_name(Direction direction);

// Trace mode's hook points, as a bit set.
inline constexpr unsigned kTraceEntry = 1, kTraceExit = 2;

} // namespace xdpcap
