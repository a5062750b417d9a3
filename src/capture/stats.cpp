#include "capture/stats.hpp"

#include <algorithm>
#include <vector>

namespace xdpcap {

namespace {

std::string counted(uint64_t n, const char* singular_rest, const char* plural_rest)
{
    return std::to_string(n) + (n == 1 ? singular_rest : plural_rest);
}

std::string direction_counts(const char* name, const xdpcap_counters& k, bool filtering, bool sampling)
{
    return std::string(name) + ": " + std::to_string(k.seen) + " seen, " +
        (filtering ? std::to_string(k.matched) + " kept by filter, " : std::string()) +
        (sampling ? std::to_string(k.sample_skipped) + " skipped by sampling, " : std::string()) +
        std::to_string(k.sampled) + " sampled, " + std::to_string(k.output_failed) + " output errors";
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
        // Staged frames are seen and matched, not yet sampled.
        s.kernel.seen = since(s.kernel.seen, later + s.staged);
        s.kernel.matched = since(s.kernel.matched, later + s.staged);
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
        totals.sample_skipped += s.kernel.sample_skipped;
        totals.stack_drops += s.drops.matched;
        totals.no_link_header += s.drops.no_link_header;
        totals.cut += s.ring.cut;
        totals.partial += s.ring.partial;
    }
    return totals;
}

namespace {

// The totals: tcpdump's three lines, then what xdpcap adds.
std::string total_lines(const std::vector<CpuStats>& cpus, const StatsFormat& format)
{
    const CaptureTotals t = sum_stats(cpus);
    const bool sampling = format.sample_every > 1;
    std::vector<std::string> totals{
        counted(t.captured, " packet captured", " packets captured"),
        counted(t.received, " packet received by filter", " packets received by filter"),
        counted(t.dropped, " packet dropped by kernel", " packets dropped by kernel")};
    if (format.drops) {
        std::string line = counted(t.stack_drops, " packet dropped by the kernel's stack",
                                   " packets dropped by the kernel's stack");
        for (size_t i = 0; format.per_cpu && i < format.drop_reasons.size(); ++i)
            line += (i == 0 ? ": " : ", ") + format.drop_reasons[i].first + " " +
                std::to_string(format.drop_reasons[i].second);
        totals.push_back(line);
        if (format.drop_misses)
            totals.push_back(counted(format.drop_misses, " drop", " drops") +
                             " missed: the drop program was already running on that CPU");
        if (t.no_link_header)
            totals.push_back(counted(t.no_link_header, " packet", " packets") +
                             " dropped by the kernel's stack before it had an Ethernet header (not captured)");
    }
    if (sampling)
        totals.push_back(counted(t.sample_skipped, " packet skipped by sampling", " packets skipped by sampling") +
                         " (1 in " + std::to_string(format.sample_every) + " kept)");
    // Read from the rings once the capture had ended: they add up too.
    if (t.discarded)
        totals.push_back(counted(t.discarded, " packet not written: ", " packets not written: ") +
                         (format.file_limit_reached ? "the last file of -W was complete"
                                                    : "the count of -c was reached"));
    if (t.unwritten)
        totals.push_back(
            counted(t.unwritten, " packet not written to the output", " packets not written to the output"));
    if (t.invalid)
        totals.push_back(counted(t.invalid, " record refused as malformed", " records refused as malformed"));
    if (t.cut && (format.largest_snaplen || format.per_cpu))
        totals.push_back(
            counted(t.cut, " packet longer than the snapshot length", " packets longer than the snapshot length"));
    if (t.partial && format.per_cpu)
        totals.push_back(counted(t.partial, " packet", " packets") +
                         " captured only as far as the hook reaches (short of the snapshot length)");
    if (format.filtering && format.per_cpu)
        totals.push_back(counted(t.seen, " packet seen on the interface", " packets seen on the interface"));
    // Late for the merge by time: written, but after a newer packet.
    if (format.per_cpu)
        totals.push_back(
            counted(t.out_of_order, " packet written out of order", " packets written out of order"));
    std::string text = format.interim ? kInterimPrefix : "";
    for (size_t i = 0; i < totals.size(); ++i)
        text += (i == 0 ? "" : format.interim ? ", " : "\n") + totals[i];
    text += '\n';
    return text;
}

// With several interfaces, a line each.
std::string interface_lines(const std::vector<CpuStats>& cpus, const StatsFormat& format)
{
    const bool sampling = format.sample_every > 1;
    std::string text;
    for (const std::string& name : interfaces_of(cpus)) {
        std::vector<CpuStats> mine;
        std::copy_if(cpus.begin(), cpus.end(), std::back_inserter(mine),
                     [&](const CpuStats& s) { return s.interface == name; });
        const CaptureTotals i = sum_stats(mine);
        text += name + ": " + counted(i.captured, " packet captured, ", " packets captured, ") +
            std::to_string(i.received) + " received by filter, " + std::to_string(i.dropped) +
            " dropped by kernel";
        if (sampling)
            text += ", " + std::to_string(i.sample_skipped) + " skipped by sampling";
        if (i.unwritten)
            text += ", " + std::to_string(i.unwritten) + " not written to the output";
        if (i.discarded)
            text += ", " + std::to_string(i.discarded) + " not written after the capture ended";
        if (i.invalid)
            text += ", " + counted(i.invalid, " record refused as malformed", " records refused as malformed");
        if (format.filtering && format.per_cpu)
            text += ", " + std::to_string(i.seen) + " seen";
        text += "\n";
    }
    return text;
}

// -v: a line per CPU, and one splitting its kernel counts by hook.
std::string cpu_lines(const std::vector<CpuStats>& cpus, const StatsFormat& format, bool several)
{
    const bool sampling = format.sample_every > 1;
    std::string text;
    for (const auto& s : cpus) {
        // Named as the pcapng interfaces are once there are several.
        text += "  " + (several ? s.interface + "@" : std::string()) + "cpu" + std::to_string(s.cpu) + ": " +
            std::to_string(s.kernel.seen) + " seen, " + std::to_string(s.kernel.sampled) + " sampled, " +
            std::to_string(s.ring.written) + " written, " +
            std::to_string(s.kernel.ring_full) + " ring full, " +
            std::to_string(s.kernel.output_failed - s.kernel.ring_full) + " other output errors, " +
            std::to_string(s.ring.lost_records) + " reported lost, " + std::to_string(s.ring.invalid) +
            " malformed, " + std::to_string(s.ring.discarded) + " after count, " +
            std::to_string(s.ring.unwritten) + " not written, " + std::to_string(s.ring.out_of_order) +
            " written out of order" +
            (s.ring.incomplete ? ", " + std::to_string(s.ring.incomplete) + " not whole in the ring" : std::string()) +
            (format.filtering ? ", " + std::to_string(s.kernel.matched) + " kept by filter" : std::string()) +
            (sampling ? ", " + std::to_string(s.kernel.sample_skipped) + " skipped by sampling" : std::string()) +
            "\n";
        if (!format.both_directions && !format.trace_points && !format.drops)
            continue;
        std::string split;
        const auto part = [&](const char* name, const xdpcap_counters& k) {
            split += (split.empty() ? "    " : "; ") + direction_counts(name, k, format.filtering, sampling);
        };
        // Named as the hooks are (base/hooks.hpp); Xdp's is TcIngress's too.
        if (!format.trace_points)
            part(hook_info(Hook::Xdp).name, s.ingress);
        if (format.trace_points & kTraceEntry)
            part(hook_info(Hook::Fentry).name, s.entry);
        if (format.trace_points & kTraceExit)
            part(hook_info(Hook::Fexit).name, s.exit);
        if (format.both_directions)
            part(hook_info(Hook::TcEgress).name, s.egress);
        if (format.drops)
            part(hook_info(Hook::Drop).name, s.drops);
        text += split + "\n";
    }
    return text;
}

} // namespace

std::string format_stats(const std::vector<CpuStats>& cpus, const StatsFormat& format)
{
    const bool several = interfaces_of(cpus).size() > 1;
    std::string text = total_lines(cpus, format);
    if (several)
        text += interface_lines(cpus, format);
    if (format.per_cpu)
        text += cpu_lines(cpus, format, several);
    return text;
}

} // namespace xdpcap
