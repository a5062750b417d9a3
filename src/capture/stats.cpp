#include "capture/stats.hpp"

#include <algorithm>

namespace xdpcap {

namespace {

std::string counted(uint64_t n, const char* singular_rest, const char* plural_rest)
{
    return std::to_string(n) + (n == 1 ? singular_rest : plural_rest);
}

std::string direction_counts(const char* name, const xdpcap_counters& k, bool filtering)
{
    return std::string(name) + " " + std::to_string(k.seen) + " seen, " +
        (filtering ? std::to_string(k.matched) + " kept by filter, " : std::string()) + std::to_string(k.sampled) +
        " sampled, " + std::to_string(k.output_failed) + " output errors";
}

// The interfaces in the order of their rings.
std::vector<std::string> interfaces_of(const std::vector<CpuStats>& cpus)
{
    std::vector<std::string> names;
    for (const auto& s : cpus) {
        if (std::find(names.begin(), names.end(), s.interface) == names.end())
            names.push_back(s.interface);
    }
    return names;
}

} // namespace

xdpcap_counters operator+(const xdpcap_counters& a, const xdpcap_counters& b)
{
    return xdpcap_counters{a.seen + b.seen,
                           a.matched + b.matched,
                           a.sampled + b.sampled,
                           a.output_failed + b.output_failed,
                           a.ring_full + b.ring_full,
                           a.pending_drops + b.pending_drops};
}

namespace {

// Saturating: a count taken back after a failed write never wraps around.
uint64_t since(uint64_t now, uint64_t then)
{
    return now > then ? now - then : 0;
}

} // namespace

std::vector<CpuStats> as_taken(std::vector<CpuStats> cpus, std::optional<size_t> pending)
{
    for (size_t i = 0; i < cpus.size(); ++i) {
        CpuStats& s = cpus[i];
        uint64_t later = since(s.kernel.sampled, s.ring.samples);
        if (pending && *pending == i && s.ring.samples > 0) {
            --s.ring.samples;
            ++later;
        }
        s.kernel.seen = since(s.kernel.seen, later);
        s.kernel.matched = since(s.kernel.matched, later);
        s.kernel.sampled = since(s.kernel.sampled, later);
    }
    return cpus;
}

CaptureTotals sum_stats(const std::vector<CpuStats>& cpus)
{
    CaptureTotals totals;
    for (const auto& s : cpus) {
        totals.captured += s.ring.written;
        totals.seen += s.kernel.seen;
        totals.received += s.kernel.matched;
        totals.dropped += s.kernel.output_failed;
        totals.invalid += s.ring.invalid;
        totals.discarded += s.ring.discarded;
        totals.unwritten += s.ring.unwritten;
        totals.out_of_order += s.ring.out_of_order;
    }
    return totals;
}

std::string format_stats(const std::vector<CpuStats>& cpus, bool per_cpu, bool filtering, bool both_directions,
                         unsigned trace_points)
{
    const CaptureTotals t = sum_stats(cpus);
    std::string text = counted(t.captured, " packet captured\n", " packets captured\n") +
        counted(t.received, " packet received by filter\n", " packets received by filter\n") +
        counted(t.dropped, " packet dropped by kernel\n", " packets dropped by kernel\n");
    if (t.unwritten)
        text += counted(t.unwritten, " packet not written to the output\n", " packets not written to the output\n");
    if (t.invalid)
        text += counted(t.invalid, " record refused as malformed\n", " records refused as malformed\n");
    if (filtering && per_cpu)
        text += counted(t.seen, " packet seen on the interface\n", " packets seen on the interface\n");
    const std::vector<std::string> interfaces = interfaces_of(cpus);
    const bool several = interfaces.size() > 1;
    if (several) {
        for (const std::string& name : interfaces) {
            std::vector<CpuStats> mine;
            std::copy_if(cpus.begin(), cpus.end(), std::back_inserter(mine),
                         [&](const CpuStats& s) { return s.interface == name; });
            const CaptureTotals i = sum_stats(mine);
            text += name + ": " + counted(i.captured, " packet captured, ", " packets captured, ") +
                std::to_string(i.received) + " received by filter, " + std::to_string(i.dropped) +
                " dropped by kernel";
            if (i.unwritten)
                text += ", " + std::to_string(i.unwritten) + " not written to the output";
            if (i.invalid)
                text += ", " + counted(i.invalid, " record refused as malformed", " records refused as malformed");
            if (filtering && per_cpu)
                text += ", " + std::to_string(i.seen) + " seen";
            text += "\n";
        }
    }
    if (!per_cpu)
        return text;
    // Late for the merge by time: written, but after a newer packet.
    text += counted(t.out_of_order, " packet written out of order\n", " packets written out of order\n");
    for (const auto& s : cpus) {
        // Named as the pcapng interfaces are once there are several.
        text += "  " + (several ? s.interface + "@" : std::string()) + "cpu" + std::to_string(s.cpu) + ": " +
            std::to_string(s.kernel.seen) + " seen, " + std::to_string(s.kernel.sampled) + " sampled, " + std::to_string(s.ring.written) + " written, " +
            std::to_string(s.kernel.ring_full) + " ring full, " +
            std::to_string(s.kernel.output_failed - s.kernel.ring_full) + " other output errors, " +
            std::to_string(s.ring.lost_records) + " reported lost, " + std::to_string(s.ring.invalid) +
            " malformed, " + std::to_string(s.ring.discarded) + " after count, " +
            std::to_string(s.ring.unwritten) + " not written, " + std::to_string(s.ring.out_of_order) +
            " written out of order" +
            (filtering ? ", " + std::to_string(s.kernel.matched) + " kept by filter" : std::string()) + "\n";
        if (!both_directions && !trace_points)
            continue;
        std::string split;
        const auto part = [&](const char* name, const xdpcap_counters& k) {
            split += (split.empty() ? "    " : "; ") + direction_counts(name, k, filtering);
        };
        if (!trace_points)
            part("in:", s.ingress);
        if (trace_points & kTraceEntry)
            part("entry:", s.entry);
        if (trace_points & kTraceExit)
            part("exit:", s.exit);
        if (both_directions)
            part("out:", s.egress);
        text += split + "\n";
    }
    return text;
}

} // namespace xdpcap
