#include "base/error.hpp"

#include <cstring>

namespace xdpcap {

std::string errno_text(int err)
{
    if (err < 0)
        err = -err;
    const char* text = strerrordesc_np(err);
    if (text)
        return text;
    return "unknown error " + std::to_string(err);
}

} // namespace xdpcap
