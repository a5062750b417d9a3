// Attaches a capture program to an interface's tc ingress or egress hook,
// first among the programs there: through a tcx BPF link where the kernel has
// one (6.6 and later), which the kernel removes even after SIGKILL; otherwise
// through a clsact qdisc and a tc filter of priority 1, removed by the
// destructor, and by the next run when a killed run left them behind.
#pragma once

#include <cstdint>
#include <string>

#include "base/unique_fd.hpp"

namespace xdpcap {

class TcHook {
public:
    enum class Mechanism { Tcx, Clsact };
    enum class Point { Ingress, Egress };

    // Raises Error with one line naming the interface and the cause.
    static TcHook attach(int prog_fd, uint32_t ifindex, const std::string& ifname, Point point);

    TcHook(TcHook&& other) noexcept;
    TcHook& operator=(TcHook&& other) noexcept;
    TcHook(const TcHook&) = delete;
    TcHook& operator=(const TcHook&) = delete;
    ~TcHook() { detach(); }

    void detach() noexcept;
    bool attached() const noexcept { return link_ || tc_attached_; }
    Mechanism mechanism() const noexcept { return mechanism_; }
    // The interface went away and took the hook with it.
    bool defunct() const;

private:
    TcHook() = default;

    Mechanism mechanism_ = Mechanism::Tcx;
    Point point_ = Point::Egress;
    UniqueFd link_;            // tcx
    uint32_t ifindex_ = 0;     // clsact
    uint32_t tc_handle_ = 0;   // clsact: ours, and says whether we created the qdisc
    bool tc_attached_ = false; // clsact
};

// Removes the clsact filters of ours that no live process uses (a killed
// run's leftovers, at ingress and egress), and the qdisc if that run created
// it. Returns true if it removed any.
bool remove_stale_clsact_filter(uint32_t ifindex);

} // namespace xdpcap
