#include "app/output_claim.hpp"

#include <ctime>

#include "base/error.hpp"

namespace xdpcap::live {

namespace {

bool writes_file(const Config& config)
{
    return config.writes_pcapng() && !config.writes_to_stdout();
}

// With -Z, the file is opened as the user: created as its own, never a
// file the user could not have written itself, and nothing to hand over.
Sink open_sink(const Config& config, const std::optional<RotationPlan>& rotation, StopSignals& signals,
               const std::optional<RunAsUser>& run_as)
{
    if (!writes_file(config))
        return Sink::standard_output();
    std::optional<FileSystemIdentity> as_user;
    if (run_as)
        as_user.emplace(*run_as);
    return Sink::open_file(rotation ? rotation->current() : *config.output, Sink::kDefaultBufferSize, &signals,
                           config.tls_keys.wanted());
}

} // namespace

ClaimedOutput claim_output(const Config& config, StopSignals& signals, const std::optional<RunAsUser>& run_as)
{
    // With -C/-G the first file's name already follows tcpdump's rules.
    std::optional<RotationPlan> rotation;
    if (config.rotates())
        rotation.emplace(*config.output, RotationSettings{config.file_size, config.rotate_seconds, config.file_count},
                         ::time(nullptr));
    // Before anything is attached, so that a path the user may not write
    // fails with nothing touched; the files -C/-G open later are opened
    // after the change of user.
    Sink sink = open_sink(config, rotation, signals, run_as);
    sink.watch(&signals);
    return ClaimedOutput(std::move(rotation), std::move(sink));
}

} // namespace xdpcap::live
