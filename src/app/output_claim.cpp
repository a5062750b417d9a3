#include "app/output_claim.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

#include "base/error.hpp"

namespace xdpcap::live {

namespace {

bool writes_file(const Config& config)
{
    return config.writes_pcapng() && !config.writes_to_stdout();
}

// -Z: the output file the capture opened as root becomes the user's. A
// FIFO or device given as -w FILE is left as it is.
void give_file_to(const Sink& sink, const RunAsUser& user)
{
    struct stat st {};
    if (::fstat(sink.fd(), &st) != 0 || !S_ISREG(st.st_mode))
        return;
    if (::fchown(sink.fd(), user.uid, user.gid) != 0)
        throw Error(sink.name() + ": cannot give it to " + user.name + ": " + errno_text(errno));
}

Sink open_sink(const Config& config, const std::optional<RotationPlan>& rotation, StopSignals& signals)
{
    Sink sink = writes_file(config) ? Sink::open_file(rotation ? rotation->current() : *config.output,
                                                      Sink::kDefaultBufferSize, &signals)
                                    : Sink::standard_output();
    sink.watch(&signals);
    return sink;
}

} // namespace

ClaimedOutput claim_output(const Config& config, StopSignals& signals, const std::optional<RunAsUser>& run_as)
{
    // With -C/-G the first file's name already follows tcpdump's rules.
    std::optional<RotationPlan> rotation;
    if (config.rotates())
        rotation.emplace(*config.output, RotationSettings{config.file_size, config.rotate_seconds, config.file_count},
                         ::time(nullptr));
    // As tcpdump: the file is opened before -Z gives up the rights to, so
    // it may be in a directory only root can write. It then belongs to the
    // user, who writes it (and, with -C/-G, the next ones, created as it).
    Sink sink = open_sink(config, rotation, signals);
    ClaimedOutput claimed(std::move(rotation), std::move(sink));
    if (run_as && writes_file(config))
        give_file_to(claimed.sink(), *run_as);
    return claimed;
}

} // namespace xdpcap::live
