#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "host/containers.hpp"
#include "host/interface_containers.hpp"
#include "host/process_gone.hpp"
#include "base/error.hpp"

using namespace xdpcap;

namespace {

using xdpcap::test::gone;
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

TEST(Containers, EngineOfTheCgroupPath)
{
    const auto engine = [](const std::string& path) {
        const CgroupContainer c = container_in_cgroup(path);
        EXPECT_EQ(c.id, kId) << path;
        return c.engine;
    };
    EXPECT_EQ(engine("/libpod_parent/libpod-" + kId), "podman");
    EXPECT_EQ(engine("/system.slice/docker-" + kId + ".scope"), "docker");
    EXPECT_EQ(engine("/docker/" + kId), "docker");
    EXPECT_EQ(engine("/kubepods.slice/x/cri-containerd-" + kId + ".scope"), "containerd");
    EXPECT_EQ(engine("/kubepods/burstable/pod1/crio-" + kId), "CRI-O");
    EXPECT_EQ(container_in_cgroup("/libpod_parent/conmon").engine, "");
}

// podman's conmon, as /proc/PID/cmdline holds its arguments.
TEST(Containers, ConmonNamesItsContainer)
{
    using namespace std::string_literals;
    const std::string podman = "/usr/bin/conmon\0--api-version\0001\0-c\0"s + kId + "\0-u\0"s + kId +
        "\0-r\0/usr/sbin/runc\0-n\0web-1\0--exit-dir\0/run/exits\0"s;
    const auto named = conmon_container(podman);
    ASSERT_TRUE(named);
    EXPECT_EQ(named->first, kId);
    EXPECT_EQ(named->second, "web-1");
    const auto long_options = conmon_container("conmon\0--cid="s + kId + "\0--name=k8s_nginx_pod\0"s);
    ASSERT_TRUE(long_options);
    EXPECT_EQ(long_options->second, "k8s_nginx_pod");
    EXPECT_FALSE(conmon_container("conmon\0-c\0"s + kId + "\0"s)); // no name
    EXPECT_FALSE(conmon_container("conmon\0-n\0web\0"s));          // no ID
    EXPECT_FALSE(conmon_container("conmon\0-c\0"s + kId + "\0-n\0a\033[2Jb\0"s)); // nothing for a terminal
}

TEST(Containers, DockerConfigName)
{
    EXPECT_EQ(docker_config_name(R"({"State":{},"Config":{"Labels":{"Name":"x"}},"Name":"/web","Driver":"overlay2"})"),
              "web");
    EXPECT_EQ(docker_config_name(R"({"Name":""})"), "");
    EXPECT_EQ(docker_config_name(R"({"Name":"/we b"})"), "");
    EXPECT_EQ(docker_config_name(R"({"Name":"/web)"), "");
}

TEST(Containers, DescriptionNamesContainerAndEngine)
{
    EXPECT_EQ(container_description(InterfaceContainer{"web", kId, "podman"}), "container web, podman");
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

namespace {

using Outcome = EngineAnswer::Outcome;

} // namespace

TEST(Containers, AnEngineThatHangsIsStoppedWithWhatItStarted)
{
    const std::string pids = ::testing::TempDir() + "xdpcap-engine-pids";
    std::remove(pids.c_str());
    const auto begin = std::chrono::steady_clock::now();
    // Long enough for the shell to have started its sleeper on a loaded
    // machine (a sanitizer build beside it): 0.3 s was not, once.
    const EngineAnswer answer =
        run_engine({"/bin/sh", "-c", "sleep 30 & echo $! > " + pids + "; wait"}, 2000, kEngineOutputLimit);
    EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(5));
    EXPECT_EQ(answer.outcome, Outcome::TimedOut);
    EXPECT_EQ(engine_problem("podman", answer, 2000), "podman inspect gave no answer within 2 s (stopped)");
    EXPECT_EQ(engine_problem("podman", answer, 300), "podman inspect gave no answer within 0.3 s (stopped)");
    EXPECT_EQ(engine_problem("podman", answer), "podman inspect gave no answer within 5 s (stopped)");
    std::ifstream in(pids);
    pid_t sleeper = 0;
    ASSERT_TRUE(in >> sleeper);
    bool sleeper_gone = false;
    for (int i = 0; i < 100 && !sleeper_gone; ++i) {
        sleeper_gone = gone(sleeper);
        if (!sleeper_gone)
            ::usleep(10000);
    }
    EXPECT_TRUE(sleeper_gone);
    std::remove(pids.c_str());
}

TEST(Containers, AnEngineThatFloodsIsStoppedAtTheLimit)
{
    const EngineAnswer answer = run_engine({"/bin/sh", "-c", "while :; do echo flood; done"}, 10000, 65536);
    EXPECT_EQ(answer.outcome, Outcome::TooMuchOutput);
    EXPECT_TRUE(answer.output.empty());
    EXPECT_EQ(engine_problem("docker", answer, kEngineTimeoutMs, 65536),
              "docker inspect wrote more than 65536 bytes (stopped)");
    EXPECT_EQ(engine_problem("docker", answer), "docker inspect wrote more than 1 MiB (stopped)");
}

TEST(Containers, AnEngineFailureSaysItsLastLine)
{
    const EngineAnswer answer = run_engine(
        {"/bin/sh", "-c", "echo '[1,2]'; echo 'time=x level=warning' >&2; echo 'Error: database is locked' >&2; "
                          "echo >&2; exit 125"});
    EXPECT_EQ(answer.outcome, Outcome::Ran);
    EXPECT_TRUE(WIFEXITED(answer.wait_status));
    EXPECT_EQ(WEXITSTATUS(answer.wait_status), 125);
    EXPECT_EQ(answer.last_error, "Error: database is locked");
    EXPECT_EQ(engine_problem("podman", answer), "podman inspect failed: Error: database is locked");
}

TEST(Containers, NotAProblemWhenTheEngineKnowsNoSuchContainer)
{
    EngineAnswer answer{Outcome::Ran, 125 << 8, "", "Error: no such container web"};
    EXPECT_EQ(engine_problem("podman", answer), std::nullopt);
    answer.last_error = "Error: No such container: web";
    EXPECT_EQ(engine_problem("docker", answer), std::nullopt);
    answer.last_error = "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker "
                        "daemon running?";
    EXPECT_EQ(engine_problem("docker", answer), std::nullopt);
    answer.last_error = "";
    EXPECT_EQ(engine_problem("docker", answer), "docker inspect failed with exit status 125");
    EXPECT_EQ(engine_problem("podman", run_engine({"no-such-engine-xdpcap", "inspect"})), std::nullopt);
    EXPECT_EQ(run_engine({"no-such-engine-xdpcap"}).outcome, Outcome::Missing);
    answer = run_engine({"/bin/sh", "-c", "echo web abc 42"});
    EXPECT_EQ(answer.output, "web abc 42\n");
    EXPECT_EQ(engine_problem("podman", answer), std::nullopt);
}
