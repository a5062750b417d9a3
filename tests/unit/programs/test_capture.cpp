#include "programs/capture.hpp"

#include <cerrno>

#include <gtest/gtest.h>

namespace xdpcap {
namespace {

// Trace mode's refusal says what failed: a kernel without the tracing
// program type, or a load the kernel refused for another reason.
TEST(TraceUnavailable, SaysWhatFailed)
{
    EXPECT_FALSE(trace_unavailable(1).has_value());
    EXPECT_EQ(trace_unavailable(0), "this kernel does not offer fentry/fexit (the tracing program type)");
    EXPECT_EQ(trace_unavailable(-EPERM), "loading a tracing program (fentry/fexit) failed: Operation not permitted");
    EXPECT_EQ(trace_unavailable(-EINVAL), "loading a tracing program (fentry/fexit) failed: Invalid argument");
}

} // namespace
} // namespace xdpcap
