#include "base/hooks.hpp"

namespace xdpcap {

const char* xdp_mode_name(XdpMode mode)
{
    switch (mode) {
    case XdpMode::Native:
        return "native";
    case XdpMode::Generic:
        return "generic";
    case XdpMode::Auto:
        break;
    }
    return "auto";
}

const char* direction_name(Direction direction)
{
    switch (direction) {
    case Direction::In:
        return "in";
    case Direction::Out:
        return "out";
    case Direction::InOut:
        break;
    }
    return "inout";
}

} // namespace xdpcap
