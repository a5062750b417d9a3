// Privilege separation for -r as root: the file is parsed by a child that
// gave up every privilege, while the parent, which parses nothing, waits for
// it and then finishes what only it may (renaming the -w file into a
// directory the child could not write).
#pragma once

#include <functional>
#include <optional>

namespace xdpcap {

// How the child ended.
struct WorkerEnd {
    int exit_status = 0; // when it exited
    int signal = 0;      // when a signal ended it
};

// Forks. The child returns nothing, with the parent's signal mask. The
// parent calls `parent_first`, then returns once the child ended, having
// passed on to it SIGINT, SIGTERM, SIGHUP and SIGQUIT meanwhile.
std::optional<WorkerEnd> fork_worker(const std::function<void()>& parent_first);

// The parent's end as the child's: its exit status, or the same signal
// raised on itself (returns only when that signal does not end it).
int end_as(const WorkerEnd& end);

} // namespace xdpcap
