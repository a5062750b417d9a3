// Which interfaces -i any and -i PATTERN capture: one predicate, asked at
// the start and again for every interface created during the capture.
#pragma once

#include <string>
#include <vector>

#include "host/interfaces.hpp"

namespace xdpcap {

// Whether an -i argument is a shell pattern (fnmatch: *, ? or [...]) rather
// than an interface's name: it holds one of those characters and no
// interface is named so.
bool is_interface_pattern(const std::string& argument);

class InterfaceSelection {
public:
    // -i any: every interface.
    InterfaceSelection() = default;
    // -i PATTERN (repeated): the interfaces whose name one of `patterns`
    // matches; a plain name matches itself only.
    explicit InterfaceSelection(std::vector<std::string> patterns) : patterns_(std::move(patterns)) {}

    // `without_loopback`: -Q out, where lo (its packets taken once, as
    // received) has nothing to give.
    InterfaceSelection& without_loopback(bool on) noexcept
    {
        without_loopback_ = on;
        return *this;
    }

    // By name alone: what a link notification tells before anything is
    // asked of the interface.
    bool names(const std::string& name) const;
    // Whether it takes part: named, its frames Ethernet (one link type for
    // every interface), and not a loopback interface left out.
    bool wanted(const InterfaceInfo& iface) const;
    bool any() const noexcept { return patterns_.empty(); }
    const std::vector<std::string>& patterns() const noexcept { return patterns_; }

private:
    std::vector<std::string> patterns_;
    bool without_loopback_ = false;
};

} // namespace xdpcap
