#include <gtest/gtest.h>

#include "host/containers.hpp"
#include "base/error.hpp"

using namespace xdpcap;

namespace {
const std::string kId = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
}

TEST(Containers, IdInTheCgroupPathOfEachEngine)
{
    EXPECT_EQ(container_id_in_cgroup("/libpod_parent/libpod-" + kId), kId);             // podman, cgroupfs
    EXPECT_EQ(container_id_in_cgroup("/machine.slice/libpod-" + kId + ".scope/container"), kId); // podman, systemd
    EXPECT_EQ(container_id_in_cgroup("/system.slice/docker-" + kId + ".scope"), kId);   // docker, systemd
    EXPECT_EQ(container_id_in_cgroup("/docker/" + kId), kId);                           // docker, cgroupfs
    EXPECT_EQ(container_id_in_cgroup("/kubepods.slice/x/cri-containerd-" + kId + ".scope"), kId);
    EXPECT_EQ(container_id_in_cgroup("/kubepods/burstable/pod1/crio-" + kId), kId);
}

TEST(Containers, NoIdWhereThereIsNone)
{
    EXPECT_EQ(container_id_in_cgroup("/"), "");
    EXPECT_EQ(container_id_in_cgroup("/user.slice/user-0.slice/session-3.scope"), "");
    EXPECT_EQ(container_id_in_cgroup("/system.slice/" + kId), ""); // a bare ID outside docker/
    EXPECT_EQ(container_id_in_cgroup("/libpod_parent/libpod-" + kId.substr(1)), ""); // 63 characters
    EXPECT_EQ(container_id_in_cgroup("/libpod_parent/conmon"), "");
}

TEST(Containers, BadNamesAreRefusedBeforeAnyEngineRuns)
{
    for (const char* name : {"", "-x", "a b", "a;b", "../x", "$(id)"}) {
        try {
            find_container(name);
            ADD_FAILURE() << name;
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("not a container name or ID"), std::string::npos) << name;
        }
    }
}
