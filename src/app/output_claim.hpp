// The output of a live capture, claimed before anything is loaded: a bad
// path fails with nothing touched. With -Z the file is opened as the user
// (its file-system identity), so it is the user's from the start.
#pragma once

#include <optional>
#include <utility>

#include "cli/config.hpp"
#include "host/privileges.hpp"
#include "output/rotation.hpp"
#include "output/sink.hpp"
#include "base/stop_signals.hpp"

namespace xdpcap::live {

// -C/-G's plan and the sink, claimed. A file created for the capture is
// removed again unless open_output() takes the sink.
class ClaimedOutput {
public:
    ClaimedOutput(std::optional<RotationPlan> rotation, Sink sink)
        : rotation_(std::move(rotation)), sink_(std::move(sink))
    {
    }
    ClaimedOutput(ClaimedOutput&& other) noexcept
        : rotation_(std::move(other.rotation_)), sink_(std::move(other.sink_)),
          taken_(std::exchange(other.taken_, true))
    {
    }
    ClaimedOutput& operator=(ClaimedOutput&&) = delete;
    ~ClaimedOutput()
    {
        if (!taken_)
            sink_.discard();
    }

    Sink& sink() noexcept { return sink_; }
    std::optional<RotationPlan>& rotation() noexcept { return rotation_; }
    // The capture starts: the file stays.
    Sink take() noexcept
    {
        taken_ = true;
        return std::move(sink_);
    }

private:
    std::optional<RotationPlan> rotation_;
    Sink sink_;
    bool taken_ = false;
};

// -C/-G's first file or -w FILE or standard output, watched by `signals`;
// with -Z, opened as `run_as`.
ClaimedOutput claim_output(const Config& config, StopSignals& signals, const std::optional<RunAsUser>& run_as);

} // namespace xdpcap::live
