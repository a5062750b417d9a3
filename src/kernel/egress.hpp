// Attaches the egress capture program to an interface: through a tcx BPF link
// where the kernel has one (6.6 and later), which the kernel removes even
// after SIGKILL; otherwise through a clsact qdisc and a tc filter, removed by
// the destructor, and by the next run when a killed run left them behind.
#pragma once

#include <cstdint>
#include <string>

#include "unique_fd.hpp"

namespace xdpcap {

class EgressHook {
public:
    enum class Mechanism { Tcx, Clsact };

    // Raises Error with one line naming the interface and the cause.
    static EgressHook attach(int prog_fd, uint32_t ifindex, const std::string& ifname);

    EgressHook(EgressHook&& other) noexcept;
    EgressHook& operator=(EgressHook&& other) noexcept;
    EgressHook(const EgressHook&) = delete;
    EgressHook& operator=(const EgressHook&) = delete;
    ~EgressHook() { detach(); }

    void detach() noexcept;
    bool attached() const noexcept { return link_ || tc_attached_; }
    Mechanism mechanism() const noexcept { return mechanism_; }
    // The interface went away and took the hook with it.
    bool defunct() const;

private:
    EgressHook() = default;

    Mechanism mechanism_ = Mechanism::Tcx;
    UniqueFd link_;            // tcx
    uint32_t ifindex_ = 0;     // clsact
    uint32_t tc_handle_ = 0;   // clsact: ours, and says whether we created the qdisc
    bool tc_attached_ = false; // clsact
};

// Removes a clsact filter of ours that no live process uses (a killed run's
// leftover), and the qdisc if that run created it. Returns true if it did.
bool remove_stale_clsact_filter(uint32_t ifindex);

} // namespace xdpcap
