// The first step of a child that will run another program.
#pragma once

namespace xdpcap {

// Between fork and exec, so async-signal-safe: a process group of its own
// (stopped as one, with whatever it starts), every signal at its default
// and none blocked. xdpcap ignores SIGPIPE and SIGXFSZ and blocks its stop
// signals; a program it runs must inherit neither.
void start_child_group() noexcept;

} // namespace xdpcap
