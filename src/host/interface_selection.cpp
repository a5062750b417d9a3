#include "host/interface_selection.hpp"

#include <fnmatch.h>
#include <net/if.h>

namespace xdpcap {

bool is_interface_pattern(const std::string& argument)
{
    return argument.find_first_of("*?[") != std::string::npos && ::if_nametoindex(argument.c_str()) == 0;
}

bool InterfaceSelection::names(const std::string& name) const
{
    if (patterns_.empty())
        return true;
    for (const std::string& pattern : patterns_) {
        if (::fnmatch(pattern.c_str(), name.c_str(), 0) == 0)
            return true;
    }
    return false;
}

bool InterfaceSelection::wanted(const InterfaceInfo& iface) const
{
    return names(iface.name) && iface.ethernet && !(iface.loopback && without_loopback_);
}

} // namespace xdpcap
